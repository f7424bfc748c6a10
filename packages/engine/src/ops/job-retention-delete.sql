-- Retention: deletes finished jobs (of the statuses in $1) whose completed_at
-- is older than their window, with their history, in one bounded batch.
-- The window is per queue: queue_config.settings.retention.<status>_days
-- (a number of days, fractions allowed), else the default for the status
-- ($2, aligned with $1). Groups (organization, queue, status) are found by a
-- loose index scan over jobs_finished_idx (one probe per group), and each
-- group contributes only rows past its own cutoff, so nothing kept is
-- rescanned. The DELETE re-checks status and completed_at: a job retried
-- (or replayed from the DLQ) while this ran is not deleted.
WITH RECURSIVE groups AS (
  (SELECT organization_id, queue_name, status
   FROM spool.jobs
   WHERE completed_at IS NOT NULL
   ORDER BY organization_id, queue_name, status
   LIMIT 1)
  UNION ALL
  SELECT n.organization_id, n.queue_name, n.status
  FROM groups g
  CROSS JOIN LATERAL (
    SELECT j.organization_id, j.queue_name, j.status
    FROM spool.jobs j
    WHERE j.completed_at IS NOT NULL
      AND (j.organization_id, j.queue_name, j.status) > (g.organization_id, g.queue_name, g.status)
    ORDER BY j.organization_id, j.queue_name, j.status
    LIMIT 1
  ) n
),
cutoffs AS (
  SELECT g.organization_id, g.queue_name, g.status,
         now() - make_interval(secs => 86400 * greatest(0, coalesce(
           CASE WHEN jsonb_typeof(qc.settings -> 'retention' -> (g.status || '_days')) = 'number'
                THEN (qc.settings -> 'retention' ->> (g.status || '_days'))::float8 END,
           d.days))) AS cutoff
  FROM groups g
  JOIN unnest($1::text[], $2::float8[]) AS d(status, days) ON d.status = g.status
  LEFT JOIN spool.queue_config qc ON qc.organization_id = g.organization_id AND qc.queue_name = g.queue_name
),
victims AS (
  SELECT v.id, c.status, c.cutoff
  FROM cutoffs c
  CROSS JOIN LATERAL (
    SELECT j.id
    FROM spool.jobs j
    WHERE j.organization_id = c.organization_id AND j.queue_name = c.queue_name AND j.status = c.status
      AND j.completed_at IS NOT NULL AND j.completed_at < c.cutoff
    ORDER BY j.completed_at
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
)
SELECT (SELECT count(*) FROM deleted)::int AS jobs, (SELECT count(*) FROM history)::int AS history;
