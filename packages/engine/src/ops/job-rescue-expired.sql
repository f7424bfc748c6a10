-- Lease reaper: processing jobs whose lease ran out go back to pending with
-- retry_count + 1, or to the dead-letter queue when retries are exhausted
-- (docs/compatibility.md §3.5). A job whose cancellation was requested ends cancelled
-- instead: its worker is gone, and running it again would ignore the cancel.
-- Bounded batch; SKIP LOCKED lets replicas overlap safely. There is no index
-- on lease_expires_at (migration 009: it cost an index entry per claim and
-- made heartbeats non-HOT updates): the processing rows are read through
-- jobs_worker_idx, which holds only them, and sorted.
WITH expired AS (
  SELECT id, lease_id, assigned_worker_id,
         CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled'
              WHEN retry_count < max_retries THEN 'pending'
              ELSE 'deadletter' END AS next_status
  FROM spool.jobs
  WHERE status = 'processing' AND lease_expires_at < now()
  ORDER BY lease_expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
rescued AS (
  UPDATE spool.jobs j
  SET status = e.next_status,
      retry_count = CASE WHEN e.next_status = 'pending' THEN j.retry_count + 1 ELSE j.retry_count END,
      last_error = 'Lease expired (worker timeout)',
      completed_at = CASE WHEN e.next_status = 'pending' THEN NULL ELSE now() END,
      assigned_worker_id = CASE WHEN e.next_status = 'pending' THEN NULL ELSE j.assigned_worker_id END,
      lease_id = NULL,
      lease_expires_at = NULL,
      updated_at = now()
  FROM expired e
  WHERE j.id = e.id
  RETURNING j.id, j.organization_id, j.queue_name, j.status, j.retry_count, j.payload, j.last_error, j.workflow_id,
            e.lease_id AS held_lease_id, e.assigned_worker_id AS held_worker_id
),
dlq AS (
  INSERT INTO spool.dead_letter_queue (organization_id, job_id, queue_name, payload, error, retry_count)
  SELECT organization_id, id, queue_name, payload, last_error, retry_count FROM rescued WHERE status = 'deadletter'
  ON CONFLICT (job_id) DO NOTHING
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id, message)
  SELECT organization_id, id, queue_name, 'lease_expired', 'processing', status, held_worker_id, held_lease_id, last_error FROM rescued
),
-- A dead-lettered workflow job counts as failed in its workflow (docs/workflows.md).
workflow_delta AS (
  SELECT organization_id, workflow_id,
         count(*) FILTER (WHERE status IN ('failed', 'deadletter'))::int AS failed,
         count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled
  FROM rescued
  WHERE workflow_id IS NOT NULL AND status <> 'pending'
  GROUP BY organization_id, workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET failed_jobs = w.failed_jobs + d.failed,
      cancelled_jobs = w.cancelled_jobs + d.cancelled,
      started_at = coalesce(w.started_at, now()),
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = d.organization_id AND w.id = d.workflow_id
)
SELECT r.id, r.organization_id, r.queue_name, r.status,
       (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
          FROM rescued WHERE status = 'pending' HAVING count(*) > 0) IS NOT NULL AS notified
FROM rescued r;
