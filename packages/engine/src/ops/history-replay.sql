-- One organization's history for a resuming realtime client: ids in
-- ($2, $3] plus the ids $4 it had not received, optionally of one job ($5)
-- or queue ($6), oldest first, at most $7 rows.
SELECT h.id, h.organization_id, h.job_id, h.queue_name, h.event, h.from_status, h.to_status, h.worker_id,
       h.message, h.created_at, j.priority, j.retry_count, j.max_retries, j.started_at,
       CASE WHEN h.event = 'complete' THEN j.result END AS result
FROM spool.job_history h
LEFT JOIN spool.jobs j ON j.id = h.job_id AND j.organization_id = h.organization_id
WHERE h.organization_id = $1
  AND ((h.id > $2 AND h.id <= $3) OR h.id = ANY($4::bigint[]))
  AND ($5::uuid IS NULL OR h.job_id = $5::uuid)
  AND ($6::text IS NULL OR h.queue_name = $6::text)
ORDER BY h.id
LIMIT $7;
