-- Retention of jobs that can still move (failed, dead-lettered: the
-- statuses in $1): deletes those whose completed_at is older than their
-- window, with their history, progress and log lines (migration 020), the
-- keyed answers that name them (migration 045), their idempotency keys and
-- dead-letter rows (migration 046: no foreign key cascades to them any
-- more), in one bounded batch. Completed and cancelled jobs do not come
-- here: they go a day's partition at a time (migration 047,
-- spool.jobs_done_partition_drop_next).
-- The window is per queue: queue_config.settings.retention.<status>_days
-- (a number of days, fractions allowed), else spool.retention_defaults.
-- Queues are found by a loose index scan over
-- jobs_org_queue_status_idx (one probe per queue; a queue with only
-- processing jobs, which that index does not hold, has nothing to delete), and each (queue, status)
-- group is read in that index's created_at order from its oldest row: a job
-- finished before the cutoff was created before it too, so the scan stops at
-- the cutoff and rows kept (newer, or kept longer by a per-queue override)
-- are never rescanned. No index of its own (migration 009): completing a
-- job no longer writes an entry for retention. The DELETE re-checks status
-- and completed_at: a job retried (or replayed from the DLQ) while this ran
-- is not deleted.
WITH RECURSIVE queues AS (
  (SELECT organization_id, queue_name FROM spool.jobs_live WHERE status <> 'processing' ORDER BY organization_id, queue_name LIMIT 1)
  UNION ALL
  SELECT n.organization_id, n.queue_name
  FROM queues q
  CROSS JOIN LATERAL (
    SELECT j.organization_id, j.queue_name
    FROM spool.jobs_live j
    WHERE (j.organization_id, j.queue_name) > (q.organization_id, q.queue_name) AND j.status <> 'processing'
    ORDER BY j.organization_id, j.queue_name
    LIMIT 1
  ) n
),
cutoffs AS (
  SELECT q.organization_id, q.queue_name, d.status,
         now() - make_interval(secs => 86400 * greatest(0, coalesce(spool.retention_override_days(qc.settings, d.status), d.days))) AS cutoff
  FROM queues q
  CROSS JOIN spool.retention_defaults d
  LEFT JOIN spool.queue_config qc ON qc.organization_id = q.organization_id AND qc.queue_name = q.queue_name
  WHERE d.status = ANY ($1::text[])
),
victims AS (
  SELECT v.id, c.status, c.cutoff
  FROM cutoffs c
  CROSS JOIN LATERAL (
    SELECT j.id
    FROM spool.jobs_live j
    WHERE j.organization_id = c.organization_id AND j.queue_name = c.queue_name AND j.status = c.status
      AND j.status <> 'processing' -- the index's predicate, spelled out (c.status is not a constant)
      AND j.created_at < c.cutoff
      AND j.completed_at IS NOT NULL AND j.completed_at < c.cutoff
    ORDER BY j.created_at
    LIMIT $2
  ) v
  LIMIT $2
),
-- The victims by `id = ANY (ARRAY(...))`, a primary-key probe: joined
-- alone, the planner may hash-join a sequential scan.
deleted AS (
  DELETE FROM spool.jobs_live j
  USING victims v
  WHERE j.id = ANY (ARRAY(SELECT id FROM victims))
    AND j.id = v.id AND j.status = v.status AND j.completed_at < v.cutoff
  RETURNING j.id, j.organization_id, j.idempotency_key
),
keys AS (
  DELETE FROM spool.job_idempotency_keys k
  USING deleted d
  WHERE k.organization_id = d.organization_id AND k.idempotency_key = d.idempotency_key AND k.job_id = d.id
),
dead_letters AS (
  DELETE FROM spool.dead_letter_queue q
  USING deleted d
  WHERE q.job_id = d.id
),
history AS (
  DELETE FROM spool.job_history h
  USING deleted d
  WHERE h.organization_id = d.organization_id AND h.job_id = d.id
  RETURNING h.id
),
progress AS (
  DELETE FROM spool.job_progress p
  USING deleted d
  WHERE p.organization_id = d.organization_id AND p.job_id = d.id
),
logs AS (
  DELETE FROM spool.job_logs g
  USING deleted d
  WHERE g.organization_id = d.organization_id AND g.job_id = d.id
),
answers AS (
  DELETE FROM spool.job_key_answers a
  USING deleted d
  WHERE a.organization_id = d.organization_id AND a.job_id = d.id
)
SELECT (SELECT count(*) FROM deleted)::int AS jobs, (SELECT count(*) FROM history)::int AS history;
