-- Cancels jobs. Pending and scheduled jobs end at once (guaranteed: a job
-- cancelled here is never claimed). Processing jobs get a cancel-requested
-- mark that the worker learns from its next heartbeat; the job ends cancelled
-- when the worker reports back; asking again changes nothing and writes no
-- second history row. Returns one row per job that exists.
-- Cancelled workflow jobs update their workflow's counters and status in the
-- same statement. Their dependents follow their edges' on_parent_failure
-- (spool.job_dependents_settle, migration 035: block waits, cancel cancels,
-- continue counts the edge as satisfied), for stamped jobs only; a job of
-- this batch that depends on another of it ends cancelled here already.
-- (A processing job only gets a request; its dependents are settled when
-- it ends.)
-- $3: who asked (job_history.actor, migration 031), NULL when unknown.
WITH target AS (
  SELECT id, status, cancel_requested_at
  FROM spool.jobs
  WHERE organization_id = $1 AND id = ANY($2::uuid[])
  FOR UPDATE
),
cancelled AS (
  UPDATE spool.jobs j
  SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(j.organization_id, j.queue_name, 'cancelled'), in_backoff = false, completed_at = now(), updated_at = now()
  FROM target t
  WHERE j.id = t.id AND j.phase = 'live' AND t.status IN ('pending', 'scheduled')
  RETURNING j.id, j.organization_id, j.queue_name, t.status AS from_status, j.workflow_id, j.dependencies_met, j.dependents_xid
),
requested AS (
  UPDATE spool.jobs j
  SET cancel_requested_at = now(), updated_at = now()
  FROM target t
  WHERE j.id = t.id AND j.phase = 'live' AND t.status = 'processing' AND t.cancel_requested_at IS NULL
  RETURNING j.id, j.organization_id, j.queue_name, j.assigned_worker_id, j.lease_id
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id, actor)
  SELECT organization_id, id, queue_name, 'cancel', from_status, 'cancelled', NULL, NULL, $3::text FROM cancelled
  UNION ALL
  SELECT organization_id, id, queue_name, 'cancel_requested', 'processing', 'processing', assigned_worker_id, lease_id, $3::text FROM requested
),
settled AS MATERIALIZED (
  SELECT s.*
  FROM (SELECT array_agg(id) AS ids FROM cancelled WHERE dependents_xid IS NOT NULL) e
  CROSS JOIN LATERAL spool.job_dependents_settle(e.ids) s
  WHERE e.ids IS NOT NULL
),
workflow_delta AS (
  SELECT workflow_id, sum(cancelled)::int AS cancelled, sum(unblocked)::int AS unblocked
  FROM (
    SELECT workflow_id, 1 AS cancelled, (dependencies_met IS FALSE)::int AS unblocked
    FROM cancelled
    WHERE workflow_id IS NOT NULL
    UNION ALL
    SELECT workflow_id, cancelled, unblocked FROM settled
  ) x
  GROUP BY workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET cancelled_jobs = w.cancelled_jobs + d.cancelled,
      blocked_jobs = greatest(w.blocked_jobs - d.unblocked, 0),
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = $1 AND w.id = d.workflow_id
)
SELECT t.id, t.status AS previous_status,
       CASE WHEN c.id IS NOT NULL THEN 'cancelled'
            WHEN t.status = 'processing' THEN 'cancel_requested'
            ELSE 'conflict' END AS outcome,
       -- Read here so that the settle runs: the workflow UPDATE alone reads it only
       -- through its join, which never runs when the organization has no workflow.
       (SELECT count(*) FROM settled) AS dependents_settled
FROM target t
LEFT JOIN cancelled c ON c.id = t.id;
