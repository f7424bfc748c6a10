-- A worker that deregisters (or is declared dead) gives its processing jobs
-- back: pending again, lease cleared, retry_count unchanged (the job did not
-- fail). A job whose cancellation was requested ends cancelled instead, and
-- its dependents follow their edges' on_parent_failure
-- (spool.job_dependents_settle, migration 035, for stamped jobs only).
WITH target AS (
  SELECT id, lease_id,
         CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE 'pending' END AS next_status
  FROM spool.jobs
  WHERE organization_id = $1 AND assigned_worker_id = $2 AND status = 'processing'
  FOR UPDATE
),
released AS (
  UPDATE spool.jobs j
  SET status = t.next_status,
      phase = CASE WHEN t.next_status = 'cancelled' THEN 'done' ELSE 'live' END,
      purge_on = CASE WHEN t.next_status = 'cancelled' THEN spool.job_purge_on(j.organization_id, j.queue_name, 'cancelled') ELSE j.purge_on END,
      assigned_worker_id = CASE WHEN t.next_status = 'pending' THEN NULL ELSE j.assigned_worker_id END,
      completed_at = CASE WHEN t.next_status = 'pending' THEN NULL ELSE now() END,
      lease_id = NULL, lease_expires_at = NULL, updated_at = now()
  FROM target t
  WHERE j.id = t.id AND j.phase = 'live'
  RETURNING j.id, j.organization_id, j.queue_name, j.status, j.workflow_id, t.lease_id AS held_lease_id, j.dependents_xid
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id, message)
  SELECT organization_id, id, queue_name, 'release', 'processing', status, $2, held_lease_id, $3 FROM released
),
settled AS MATERIALIZED (
  SELECT s.*
  FROM (SELECT array_agg(id) AS ids FROM released WHERE dependents_xid IS NOT NULL AND status = 'cancelled') e
  CROSS JOIN LATERAL spool.job_dependents_settle(e.ids) s
  WHERE e.ids IS NOT NULL
),
-- A workflow job that ends cancelled here counts in its workflow (docs/workflows.md),
-- and so do the dependents settled for it.
workflow_delta AS (
  SELECT workflow_id, sum(ended)::int AS ended, sum(cancelled)::int AS cancelled, sum(unblocked)::int AS unblocked
  FROM (
    SELECT workflow_id, 1 AS ended, 1 AS cancelled, 0 AS unblocked FROM released WHERE workflow_id IS NOT NULL AND status = 'cancelled'
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
SELECT r.id,
       (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
          FROM released WHERE status = 'pending' HAVING count(*) > 0) IS NOT NULL AS notified,
       -- Read here so that the settle runs: the workflow UPDATE alone reads it only
       -- through its join, which never runs when the organization has no workflow.
       (SELECT count(*) FROM settled) AS dependents_settled
FROM released r;
