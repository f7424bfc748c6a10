-- Jobs whose expires_at passed before they started end cancelled, with the
-- reason in last_error. (The claim never hands out an expired job even
-- before this runs.) Their dependents follow their edges' on_parent_failure
-- (spool.job_dependents_settle, migration 035, for stamped jobs only); an
-- expired job that depends on another expired here ends expired, not
-- cancelled for its parent.
WITH target AS (
  SELECT id, status
  FROM spool.jobs
  WHERE status IN ('pending', 'scheduled') AND expires_at IS NOT NULL AND expires_at <= now()
  ORDER BY expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
expired AS (
  UPDATE spool.jobs j
  SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(j.organization_id, j.queue_name, 'cancelled'), in_backoff = false,
      last_error = 'Expired: expires_at ' || to_char(j.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || ' passed before the job started',
      completed_at = now(),
      updated_at = now()
  FROM target t
  WHERE j.id = t.id AND j.phase = 'live'
  RETURNING j.id, j.organization_id, j.queue_name, t.status AS from_status, j.last_error, j.workflow_id, j.dependencies_met, j.dependents_xid
)
, history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, message)
  SELECT organization_id, id, queue_name, 'expire', from_status, 'cancelled', last_error FROM expired
),
settled AS MATERIALIZED (
  SELECT s.*
  FROM (SELECT array_agg(id) AS ids FROM expired WHERE dependents_xid IS NOT NULL) e
  CROSS JOIN LATERAL spool.job_dependents_settle(e.ids) s
  WHERE e.ids IS NOT NULL
),
-- Expired workflow jobs count as cancelled in their workflow (docs/workflows.md),
-- and so do the dependents settled for them.
workflow_delta AS (
  SELECT organization_id, workflow_id, sum(cancelled)::int AS cancelled, sum(unblocked)::int AS unblocked
  FROM (
    SELECT organization_id, workflow_id, 1 AS cancelled, (dependencies_met IS FALSE)::int AS unblocked
    FROM expired
    WHERE workflow_id IS NOT NULL
    UNION ALL
    SELECT organization_id, workflow_id, cancelled, unblocked FROM settled
  ) x
  GROUP BY organization_id, workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET cancelled_jobs = w.cancelled_jobs + d.cancelled,
      blocked_jobs = greatest(w.blocked_jobs - d.unblocked, 0),
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = d.organization_id AND w.id = d.workflow_id
)
SELECT id, organization_id, queue_name,
       -- Read here so that the settle runs: the workflow UPDATE alone reads it only
       -- through its join, which never runs when the organization has no workflow.
       (SELECT count(*) FROM settled) AS dependents_settled
FROM expired;
