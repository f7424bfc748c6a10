-- Puts a job this worker holds back to wait $5 seconds without using an
-- attempt: fenced like complete and fail (spool.job_fence, migration 042:
-- owner, lease, and the deadline, which a snooze may not dodge). The job
-- waits as a failed attempt's retry does (pending, in_backoff, scheduled_at),
-- so the claim index leaves it out and the promoter (job-promote-scheduled.sql)
-- makes it claimable when the time comes; retry_count stays as it is. A job
-- whose cancellation was requested while it ran ends cancelled instead, as
-- a failure would end it (and its dependents follow their edges'
-- on_parent_failure: spool.job_dependents_settle, migration 035, for a
-- stamped job only). The history row's message is the wake-up time.
WITH target AS (
  SELECT j.id, j.lease_id AS held_lease_id,
         CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE 'pending' END AS next_status
  FROM spool.jobs j
  WHERE j.organization_id = $1
    AND j.phase = 'live' -- a finished job holds no lease; the planner prunes jobs_done
    AND j.id = $2
    AND spool.job_fence(j, $3::text, $4::uuid) = 'held'
  FOR UPDATE OF j
),
updated AS (
  UPDATE spool.jobs j
  SET status = t.next_status,
      phase = CASE WHEN t.next_status = 'cancelled' THEN 'done' ELSE 'live' END,
      purge_on = CASE WHEN t.next_status = 'cancelled' THEN spool.job_purge_on(j.organization_id, j.queue_name, 'cancelled') ELSE j.purge_on END,
      scheduled_at = CASE WHEN t.next_status = 'pending' THEN now() + make_interval(secs => $5) ELSE j.scheduled_at END,
      in_backoff = (t.next_status = 'pending'),
      completed_at = CASE WHEN t.next_status = 'pending' THEN NULL ELSE now() END,
      assigned_worker_id = CASE WHEN t.next_status = 'pending' THEN NULL ELSE j.assigned_worker_id END,
      lease_id = NULL,
      lease_expires_at = NULL,
      updated_at = now()
  FROM target t
  WHERE j.id = t.id AND j.phase = 'live'
  RETURNING j.id, j.organization_id, j.queue_name, j.status, j.retry_count, j.scheduled_at, j.workflow_id, t.held_lease_id, j.dependents_xid
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id, message)
  SELECT organization_id, id, queue_name, 'snooze', 'processing', status, $3, held_lease_id,
         CASE WHEN status = 'pending' THEN to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END
  FROM updated
),
settled AS MATERIALIZED (
  SELECT s.*
  FROM (SELECT array_agg(id) AS ids FROM updated WHERE dependents_xid IS NOT NULL AND status = 'cancelled') e
  CROSS JOIN LATERAL spool.job_dependents_settle(e.ids) s
  WHERE e.ids IS NOT NULL
),
-- A workflow job that ends cancelled here counts in its workflow (docs/workflows.md),
-- and so do the dependents settled for it.
workflow_delta AS (
  SELECT workflow_id, sum(ended)::int AS ended, sum(cancelled)::int AS cancelled, sum(unblocked)::int AS unblocked
  FROM (
    SELECT workflow_id, 1 AS ended, 1 AS cancelled, 0 AS unblocked FROM updated WHERE workflow_id IS NOT NULL AND status = 'cancelled'
    UNION ALL
    SELECT workflow_id, 0, cancelled, unblocked FROM settled
  ) x
  GROUP BY workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET cancelled_jobs = w.cancelled_jobs + d.cancelled,
      blocked_jobs = greatest(w.blocked_jobs - d.unblocked, 0),
      started_at = CASE WHEN d.ended > 0 THEN coalesce(w.started_at, now()) ELSE w.started_at END,
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = $1 AND w.id = d.workflow_id
)
SELECT id, status, retry_count, scheduled_at,
       -- Wakes the promoter (possibly on another replica) for the wake-up time.
       (SELECT pg_notify('spool_jobs', json_build_object('q', ARRAY[]::text[], 's', (extract(epoch FROM scheduled_at) * 1000)::bigint)::text)
          FROM updated WHERE status = 'pending') IS NOT NULL AS notified,
       -- Read here so that the settle runs: the workflow UPDATE alone reads it only
       -- through its join, which never runs when the organization has no workflow.
       (SELECT count(*) FROM settled) AS dependents_settled
FROM updated;
