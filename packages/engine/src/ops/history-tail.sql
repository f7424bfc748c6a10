-- Reads the job history after $1 (at most $3 rows) plus the re-read gap ids
-- $2 (see history-cursor.ts), with the job fields events carry, and the
-- snapshot bounds that settle gaps. Always returns at least one row: with
-- no history rows the event columns are null.
SELECT h.id, h.organization_id, h.job_id, h.queue_name, h.event, h.from_status, h.to_status, h.worker_id,
       h.message, h.created_at, j.priority, j.retry_count, j.max_retries, j.started_at,
       CASE WHEN h.event = 'complete' THEN j.result END AS result,
       pg_snapshot_xmin(snap.s)::text AS snapshot_xmin, pg_snapshot_xmax(snap.s)::text AS snapshot_xmax
FROM (SELECT pg_current_snapshot() AS s) snap
LEFT JOIN LATERAL (
  (SELECT * FROM spool.job_history WHERE id > $1 ORDER BY id LIMIT $3)
  UNION ALL
  (SELECT * FROM spool.job_history WHERE id = ANY($2::bigint[]) AND id <= $1)
) h ON true
LEFT JOIN spool.jobs j ON j.id = h.job_id AND j.organization_id = h.organization_id
ORDER BY h.id;
