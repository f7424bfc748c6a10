-- Lease reaper: processing jobs whose lease ran out go back to pending with
-- retry_count + 1, or to the dead-letter queue when retries are exhausted
-- (docs/compatibility.md §3.5). A job whose cancellation was requested ends cancelled
-- instead: its worker is gone, and running it again would ignore the cancel.
-- Bounded batch; SKIP LOCKED lets replicas overlap safely. There is no index
-- on lease_expires_at (migration 009: it cost an index entry per claim and
-- made heartbeats non-HOT updates): the processing rows are read through
-- jobs_processing_idx, which holds only them, and sorted.
--
-- An attempt with a deadline (an enforced timeout, migration 026) has a
-- lease that never outlives it; a lease that ended at the deadline, not
-- before, is that attempt timing out: a failure like a worker's (the
-- event `timeout`, the queue's retry backoff, last_error naming the
-- timeout), though the worker may still be running and heartbeating (it is
-- refused from then on). A lease that ran out earlier is a silent worker.
--
-- The dependents of a job that ends here (dead-lettered or cancelled) follow
-- their edges' on_parent_failure in the same statement
-- (spool.job_dependents_settle, migration 035), for stamped jobs only.
WITH expired AS (
  SELECT j.id, j.lease_id, j.assigned_worker_id,
         coalesce(j.deadline_at <= j.lease_expires_at, false) AS timed_out,
         CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
              WHEN j.retry_count < j.max_retries THEN 'pending'
              ELSE 'deadletter' END AS next_status
  FROM spool.jobs j
  WHERE j.status = 'processing' AND j.lease_expires_at < now()
  ORDER BY j.lease_expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
retry_delay AS (
  SELECT e.id,
         spool.backoff_ms(j.retry_count,
                          coalesce(qc.backoff_base_ms, 1000),
                          coalesce(qc.backoff_max_ms, 60000),
                          coalesce(qc.backoff_jitter_ms, 500)) AS delay_ms
  FROM expired e
  JOIN spool.jobs j ON j.id = e.id
  LEFT JOIN spool.queue_config qc ON qc.organization_id = j.organization_id AND qc.queue_name = j.queue_name
  WHERE e.timed_out AND e.next_status = 'pending'
),
rescued AS (
  UPDATE spool.jobs j
  SET status = e.next_status,
      phase = CASE WHEN e.next_status = 'cancelled' THEN 'done' ELSE 'live' END,
      purge_on = CASE WHEN e.next_status = 'cancelled' THEN spool.job_purge_on(j.organization_id, j.queue_name, 'cancelled') ELSE j.purge_on END,
      retry_count = CASE WHEN e.next_status = 'pending' THEN j.retry_count + 1 ELSE j.retry_count END,
      last_error = CASE WHEN e.timed_out THEN format('Timed out after %s s (timeout_seconds): the server ended the attempt', j.timeout_seconds)
                        ELSE 'Lease expired (worker timeout)' END,
      scheduled_at = CASE WHEN d.delay_ms IS NOT NULL THEN now() + d.delay_ms * interval '1 millisecond' ELSE j.scheduled_at END,
      in_backoff = coalesce(d.delay_ms > 0, false),
      completed_at = CASE WHEN e.next_status = 'pending' THEN NULL ELSE now() END,
      assigned_worker_id = CASE WHEN e.next_status = 'pending' THEN NULL ELSE j.assigned_worker_id END,
      lease_id = NULL,
      lease_expires_at = NULL,
      updated_at = now()
  FROM expired e
  LEFT JOIN retry_delay d ON d.id = e.id
  WHERE j.id = e.id AND j.phase = 'live'
  RETURNING j.id, j.organization_id, j.queue_name, j.status, j.retry_count, j.payload, j.last_error, j.workflow_id,
            j.scheduled_at, j.in_backoff, e.timed_out,
            e.lease_id AS held_lease_id, e.assigned_worker_id AS held_worker_id, j.dependents_xid
),
dlq AS (
  INSERT INTO spool.dead_letter_queue (organization_id, job_id, queue_name, payload, error, retry_count)
  SELECT organization_id, id, queue_name, payload, last_error, retry_count FROM rescued WHERE status = 'deadletter'
  ON CONFLICT (job_id) DO NOTHING
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id, message)
  SELECT organization_id, id, queue_name, CASE WHEN timed_out THEN 'timeout' ELSE 'lease_expired' END,
         'processing', status, held_worker_id, held_lease_id, last_error FROM rescued
),
settled AS MATERIALIZED (
  SELECT s.*
  FROM (SELECT array_agg(id) AS ids FROM rescued WHERE dependents_xid IS NOT NULL AND status <> 'pending') e
  CROSS JOIN LATERAL spool.job_dependents_settle(e.ids) s
  WHERE e.ids IS NOT NULL
),
-- A dead-lettered workflow job counts as failed in its workflow (docs/workflows.md);
-- the dependents settled for it count as cancelled or no longer blocked in theirs.
workflow_delta AS (
  SELECT organization_id, workflow_id, sum(ended)::int AS ended, sum(failed)::int AS failed,
         sum(cancelled)::int AS cancelled, sum(unblocked)::int AS unblocked
  FROM (
    SELECT organization_id, workflow_id, 1 AS ended, (status IN ('failed', 'deadletter'))::int AS failed,
           (status = 'cancelled')::int AS cancelled, 0 AS unblocked
    FROM rescued
    WHERE workflow_id IS NOT NULL AND status <> 'pending'
    UNION ALL
    SELECT organization_id, workflow_id, 0, 0, cancelled, unblocked FROM settled
  ) x
  GROUP BY organization_id, workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET failed_jobs = w.failed_jobs + d.failed,
      cancelled_jobs = w.cancelled_jobs + d.cancelled,
      blocked_jobs = greatest(w.blocked_jobs - d.unblocked, 0),
      started_at = CASE WHEN d.ended > 0 THEN coalesce(w.started_at, now()) ELSE w.started_at END,
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = d.organization_id AND w.id = d.workflow_id
)
-- One NOTIFY: the queues with a job claimable again, and the earliest retry
-- after a backoff (for the promoter), as job-insert-many.sql's.
SELECT r.id, r.organization_id, r.queue_name, r.status, r.timed_out,
       (SELECT pg_notify('spool_jobs', json_build_object(
                 'q', coalesce(array_agg(DISTINCT organization_id::text || ':' || queue_name) FILTER (WHERE NOT in_backoff), ARRAY[]::text[]),
                 's', (extract(epoch FROM min(scheduled_at) FILTER (WHERE in_backoff)) * 1000)::bigint)::text)
          FROM rescued WHERE status = 'pending' HAVING count(*) > 0) IS NOT NULL AS notified,
       -- Read here so that the settle runs: the workflow UPDATE alone reads it only
       -- through its join, which never runs when the organization has no workflow.
       (SELECT count(*) FROM settled) AS dependents_settled
FROM rescued r;
