-- Deletes dead-lettered jobs (oldest first, at most $4), optionally only of
-- queue $2 and created before $3, and only of the caller's queues ($5: LIKE
-- patterns, NULL = all), with their dead-letter rows, progress and log
-- lines, the keyed answers that name them (migration 045) and their
-- idempotency keys (migration 046). The history keeps a 'purge' row
-- per job, with the credential that asked ($6, actor).
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
  DELETE FROM spool.jobs j USING target t WHERE j.id = t.id AND j.phase = 'live'
  RETURNING j.id, j.organization_id, j.queue_name, j.idempotency_key
),
dead_letters AS (
  DELETE FROM spool.dead_letter_queue q USING purged d WHERE q.job_id = d.id
),
keys AS (
  DELETE FROM spool.job_idempotency_keys k USING purged d
  WHERE k.organization_id = d.organization_id AND k.idempotency_key = d.idempotency_key AND k.job_id = d.id
),
progress AS (
  DELETE FROM spool.job_progress p USING purged d WHERE p.organization_id = d.organization_id AND p.job_id = d.id
),
logs AS (
  DELETE FROM spool.job_logs g USING purged d WHERE g.organization_id = d.organization_id AND g.job_id = d.id
),
answers AS (
  DELETE FROM spool.job_key_answers a USING purged d WHERE a.organization_id = d.organization_id AND a.job_id = d.id
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, actor)
  SELECT organization_id, id, queue_name, 'purge', 'deadletter', NULL, $6::text FROM purged
)
SELECT count(*)::int AS purged_count FROM purged;
