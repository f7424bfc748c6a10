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
  RETURNING j.id, j.organization_id, j.queue_name, t.status AS from_status, j.last_error
)
, history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, message)
  SELECT organization_id, id, queue_name, 'expire', from_status, 'cancelled', last_error FROM expired
)
SELECT id, organization_id, queue_name FROM expired;
