-- One organization's job events for a resuming realtime client: event ids
-- in ($2, $3] plus every event of the history rows $4 it had not received,
-- optionally of one job ($5) or queue ($6), oldest first, at most $7 events.
-- Event ids are row id × 1024 + position (migration 021), so the id range
-- is a range of rows.
SELECT h.id AS log_id, h.id * 1024 + (e.pos - 1) AS id, h.organization_id, e.job_id, h.queue_name, h.event,
       h.from_status, h.to_status, h.worker_id, h.message, h.created_at,
       j.priority, j.retry_count, j.max_retries, j.started_at,
       CASE WHEN h.event = 'complete' THEN j.result END AS result
FROM spool.job_history h
CROSS JOIN LATERAL unnest(coalesce(h.job_ids, ARRAY[h.job_id])) WITH ORDINALITY AS e(job_id, pos)
LEFT JOIN spool.jobs j ON j.id = e.job_id AND j.organization_id = h.organization_id
WHERE h.organization_id = $1
  AND ((h.id >= $2::bigint / 1024 AND h.id <= $3::bigint / 1024) OR h.id = ANY($4::bigint[]))
  AND ((h.id * 1024 + (e.pos - 1) > $2::bigint AND h.id * 1024 + (e.pos - 1) <= $3::bigint) OR h.id = ANY($4::bigint[]))
  AND ($5::uuid IS NULL OR e.job_id = $5::uuid)
  AND ($6::text IS NULL OR h.queue_name = $6::text)
ORDER BY h.id, e.pos
LIMIT $7;
