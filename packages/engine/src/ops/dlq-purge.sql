-- Deletes dead-lettered jobs (oldest first, at most $4), optionally only of
-- queue $2 and created before $3, and only of the caller's queues ($5: LIKE
-- patterns, NULL = all), with their progress and log lines. The history
-- keeps a 'purge' row per job.
WITH target AS (
  SELECT id
  FROM spool.jobs
  WHERE organization_id = $1
    AND status = 'deadletter'
    AND ($2::text IS NULL OR queue_name = $2::text)
    AND ($3::timestamptz IS NULL OR created_at < $3::timestamptz)
    AND ($5::text[] IS NULL OR queue_name LIKE ANY ($5::text[]))
  ORDER BY created_at ASC
  LIMIT $4
  FOR UPDATE SKIP LOCKED
),
purged AS (
  DELETE FROM spool.jobs j USING target t WHERE j.id = t.id
  RETURNING j.id, j.organization_id, j.queue_name
),
progress AS (
  DELETE FROM spool.job_progress p USING purged d WHERE p.organization_id = d.organization_id AND p.job_id = d.id
),
logs AS (
  DELETE FROM spool.job_logs g USING purged d WHERE g.organization_id = d.organization_id AND g.job_id = d.id
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status)
  SELECT organization_id, id, queue_name, 'purge', 'deadletter', NULL FROM purged
)
SELECT count(*)::int AS purged_count FROM purged;
