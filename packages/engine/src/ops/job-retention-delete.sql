-- Retention: deletes finished jobs (of the statuses in $1) whose completed_at
-- is older than their window, with their history, progress and log lines
-- (migration 020), in one bounded batch.
-- The window is per queue: queue_config.settings.retention.<status>_days
-- (a number of days, fractions allowed), else the default for the status
-- ($2, aligned with $1). Queues are found by a loose index scan over
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
  (SELECT organization_id, queue_name FROM spool.jobs WHERE status <> 'processing' ORDER BY organization_id, queue_name LIMIT 1)
  UNION ALL
  SELECT n.organization_id, n.queue_name
  FROM queues q
  CROSS JOIN LATERAL (
    SELECT j.organization_id, j.queue_name
    FROM spool.jobs j
    WHERE (j.organization_id, j.queue_name) > (q.organization_id, q.queue_name) AND j.status <> 'processing'
    ORDER BY j.organization_id, j.queue_name
    LIMIT 1
  ) n
),
cutoffs AS (
  SELECT q.organization_id, q.queue_name, d.status,
         now() - make_interval(secs => 86400 * greatest(0, coalesce(
           CASE WHEN jsonb_typeof(qc.settings -> 'retention' -> (d.status || '_days')) = 'number'
                THEN (qc.settings -> 'retention' ->> (d.status || '_days'))::float8 END,
           d.days))) AS cutoff
  FROM queues q
  CROSS JOIN unnest($1::text[], $2::float8[]) AS d(status, days)
  LEFT JOIN spool.queue_config qc ON qc.organization_id = q.organization_id AND qc.queue_name = q.queue_name
),
victims AS (
  SELECT v.id, c.status, c.cutoff
  FROM cutoffs c
  CROSS JOIN LATERAL (
    SELECT j.id
    FROM spool.jobs j
    WHERE j.organization_id = c.organization_id AND j.queue_name = c.queue_name AND j.status = c.status
      AND j.status <> 'processing' -- the index's predicate, spelled out (c.status is not a constant)
      AND j.created_at < c.cutoff
      AND j.completed_at IS NOT NULL AND j.completed_at < c.cutoff
    ORDER BY j.created_at
    LIMIT $3
  ) v
  LIMIT $3
),
deleted AS (
  DELETE FROM spool.jobs j
  USING victims v
  WHERE j.id = v.id AND j.status = v.status AND j.completed_at < v.cutoff
  RETURNING j.id, j.organization_id
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
)
SELECT (SELECT count(*) FROM deleted)::int AS jobs, (SELECT count(*) FROM history)::int AS history;
