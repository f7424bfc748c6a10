-- Jobs whose expires_at passed before they started end cancelled, with the
-- reason in last_error. (The claim never hands out an expired job even
-- before this runs.)
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
  SET status = 'cancelled', in_backoff = false,
      last_error = 'Expired: expires_at ' || to_char(j.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || ' passed before the job started',
      completed_at = now(),
      updated_at = now()
  FROM target t
  WHERE j.id = t.id
  RETURNING j.id, j.organization_id, j.queue_name, t.status AS from_status, j.last_error, j.workflow_id, j.dependencies_met
)
, history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, message)
  SELECT organization_id, id, queue_name, 'expire', from_status, 'cancelled', last_error FROM expired
),
-- Expired workflow jobs count as cancelled in their workflow (docs/workflows.md).
workflow_delta AS (
  SELECT organization_id, workflow_id, count(*)::int AS cancelled,
         count(*) FILTER (WHERE dependencies_met IS FALSE)::int AS unblocked
  FROM expired
  WHERE workflow_id IS NOT NULL
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
SELECT id, organization_id, queue_name FROM expired;
