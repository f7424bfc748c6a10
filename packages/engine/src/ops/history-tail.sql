-- Reads the job history rows after $1 plus the re-read gap rows $2 (see
-- history-cursor.ts), one output row per job event (a row of routine
-- transitions holds up to 1024, migration 021) with its event id and the job
-- fields events carry, and the snapshot bounds that settle gaps. About $3
-- events (spool.job_history_after, migration 021). Always returns at least
-- one row: with no history rows the event columns are null.
SELECT h.id AS log_id, h.id * 1024 + (e.pos - 1) AS id, h.organization_id, e.job_id, h.queue_name, h.event,
       h.from_status, h.to_status, h.worker_id, h.message, h.created_at,
       j.priority, j.retry_count, j.max_retries, j.started_at,
       CASE WHEN h.event = 'complete' THEN j.result END AS result,
       pg_snapshot_xmin(snap.s)::text AS snapshot_xmin, pg_snapshot_xmax(snap.s)::text AS snapshot_xmax
FROM (SELECT pg_current_snapshot() AS s) snap
LEFT JOIN LATERAL (
  (SELECT * FROM spool.job_history_after($1, $3))
  UNION ALL
  (SELECT * FROM spool.job_history WHERE id = ANY($2::bigint[]) AND id <= $1)
) h ON true
LEFT JOIN LATERAL unnest(coalesce(h.job_ids, ARRAY[h.job_id])) WITH ORDINALITY AS e(job_id, pos) ON true
LEFT JOIN spool.jobs j ON j.id = e.job_id AND j.organization_id = h.organization_id
ORDER BY h.id, e.pos;
