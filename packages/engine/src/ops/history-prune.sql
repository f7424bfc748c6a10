-- Rows of routine transitions (migration 021: job_id null) older than their
-- queue's longest retention window go, at most $1 per statement. They hold
-- many jobs' events, so they cannot go with each job as its own rows do; a
-- row holds jobs of one queue, and once the longest of that queue's windows
-- (queue_config.settings.retention.<status>_days, else
-- spool.retention_defaults) and one day more has passed, every finished job
-- it names is gone (a finished job goes with its day's partition, up to a
-- day after its window, migration 047). A job
-- still unfinished then tells its creation from its own columns
-- (spool.job_timeline). Queues are found by a loose index scan over
-- job_history_batch_queue_idx (one probe per queue), and each queue's rows
-- are read oldest first up to its cutoff.
WITH RECURSIVE queues AS (
  (SELECT organization_id, queue_name FROM spool.job_history WHERE job_id IS NULL ORDER BY organization_id, queue_name LIMIT 1)
  UNION ALL
  SELECT n.organization_id, n.queue_name
  FROM queues q
  CROSS JOIN LATERAL (
    SELECT h.organization_id, h.queue_name
    FROM spool.job_history h
    WHERE h.job_id IS NULL AND (h.organization_id, h.queue_name) > (q.organization_id, q.queue_name)
    ORDER BY h.organization_id, h.queue_name
    LIMIT 1
  ) n
),
cutoffs AS (
  SELECT q.organization_id, q.queue_name,
         now() - make_interval(secs => 86400 * (1 + greatest(0, (
           SELECT max(coalesce(spool.retention_override_days(qc.settings, d.status), d.days))
           FROM spool.retention_defaults d)))) AS cutoff
  FROM queues q
  LEFT JOIN spool.queue_config qc ON qc.organization_id = q.organization_id AND qc.queue_name = q.queue_name
),
victims AS (
  SELECT v.id
  FROM cutoffs c
  CROSS JOIN LATERAL (
    SELECT h.id
    FROM spool.job_history h
    WHERE h.job_id IS NULL AND h.organization_id = c.organization_id AND h.queue_name = c.queue_name
      AND h.created_at < c.cutoff
    ORDER BY h.created_at
    LIMIT $1
  ) v
  LIMIT $1
)
DELETE FROM spool.job_history h
USING victims v
WHERE h.id = v.id
RETURNING h.id;
