-- Fails a batch of jobs, fenced like complete. With retries left (and the
-- failure retryable) the same row goes back to pending with a later
-- scheduled_at from spool.backoff_ms and the queue's backoff settings;
-- otherwise it is dead-lettered with a dead_letter_queue row. A job whose
-- cancellation was requested while it ran ends cancelled instead.
-- The dependents of a job that ends here (dead-lettered or cancelled) follow
-- their edges' on_parent_failure in the same statement
-- (spool.job_dependents_settle, migration 035); only stamped jobs
-- (migration 024) are handed to it, and it is not called without one.
WITH input AS (
  SELECT * FROM unnest($2::uuid[], $3::text[], $4::uuid[], $5::text[], $6::boolean[])
         AS t(id, worker_id, lease_id, error, retryable)
),
target AS (
  SELECT j.id, j.lease_id AS held_lease_id, i.worker_id, i.error,
         CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
              WHEN i.retryable AND j.retry_count < j.max_retries THEN 'pending'
              ELSE 'deadletter' END AS next_status,
         spool.backoff_ms(j.retry_count,
                          coalesce(qc.backoff_base_ms, 1000),
                          coalesce(qc.backoff_max_ms, 60000),
                          coalesce(qc.backoff_jitter_ms, 500)) AS delay_ms
  FROM spool.jobs j
  JOIN input i ON i.id = j.id
  LEFT JOIN spool.queue_config qc ON qc.organization_id = j.organization_id AND qc.queue_name = j.queue_name
  WHERE j.organization_id = $1
    AND j.phase = 'live' -- a finished job holds no lease; the planner prunes jobs_done
    -- Owner, lease and deadline: an attempt past its deadline (migration 026)
    -- has ended as timed out, and the lease reaper records that failure, not
    -- the worker's. One jobs_pkey probe per item whatever the statistics (see
    -- job-complete-many.sql's target).
    AND spool.job_fence(j, i.worker_id, i.lease_id) = 'held'
  FOR UPDATE OF j
),
updated AS (
  UPDATE spool.jobs j
  SET status = t.next_status,
      phase = CASE WHEN t.next_status = 'cancelled' THEN 'done' ELSE 'live' END,
      purge_on = CASE WHEN t.next_status = 'cancelled' THEN spool.job_purge_on(j.organization_id, j.queue_name, 'cancelled') ELSE j.purge_on END,
      retry_count = CASE WHEN t.next_status = 'pending' THEN j.retry_count + 1 ELSE j.retry_count END,
      last_error = t.error,
      scheduled_at = CASE WHEN t.next_status = 'pending' THEN now() + t.delay_ms * interval '1 millisecond' ELSE j.scheduled_at END,
      completed_at = CASE WHEN t.next_status = 'pending' THEN NULL ELSE now() END,
      assigned_worker_id = CASE WHEN t.next_status = 'pending' THEN NULL ELSE j.assigned_worker_id END,
      in_backoff = (t.next_status = 'pending' AND t.delay_ms > 0),
      lease_id = NULL,
      lease_expires_at = NULL,
      updated_at = now()
  FROM target t
  WHERE j.id = t.id AND j.phase = 'live'
  RETURNING j.id, j.organization_id, j.queue_name, j.status, j.retry_count, j.scheduled_at, j.payload,
            j.workflow_id, j.completion_webhook, t.held_lease_id, t.worker_id, t.error, j.dependents_xid
),
dlq AS (
  INSERT INTO spool.dead_letter_queue (organization_id, job_id, queue_name, payload, error, retry_count)
  SELECT organization_id, id, queue_name, payload, error, retry_count FROM updated WHERE status = 'deadletter'
  ON CONFLICT (job_id) DO NOTHING
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id, message)
  SELECT organization_id, id, queue_name, CASE WHEN status = 'pending' THEN 'fail_retry' ELSE 'fail_final' END,
         'processing', status, worker_id, held_lease_id, error
  FROM updated
),
settled AS MATERIALIZED (
  SELECT s.*
  FROM (SELECT array_agg(id) AS ids FROM updated WHERE dependents_xid IS NOT NULL AND status <> 'pending') e
  CROSS JOIN LATERAL spool.job_dependents_settle(e.ids) s
  WHERE e.ids IS NOT NULL
),
-- The ended jobs, and the dependents settled for them (cancelled, or no
-- longer blocked), which may be of other workflows.
workflow_delta AS (
  SELECT workflow_id, sum(ended)::int AS ended, sum(failed)::int AS failed, sum(cancelled)::int AS cancelled, sum(unblocked)::int AS unblocked
  FROM (
    SELECT workflow_id, 1 AS ended, (status IN ('failed', 'deadletter'))::int AS failed, (status = 'cancelled')::int AS cancelled, 0 AS unblocked
    FROM updated
    WHERE workflow_id IS NOT NULL AND status <> 'pending'
    UNION ALL
    SELECT workflow_id, 0, 0, cancelled, unblocked FROM settled
  ) x
  GROUP BY workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET failed_jobs = w.failed_jobs + d.failed,
      cancelled_jobs = w.cancelled_jobs + d.cancelled,
      blocked_jobs = greatest(w.blocked_jobs - d.unblocked, 0),
      started_at = CASE WHEN d.ended > 0 THEN coalesce(w.started_at, now()) ELSE w.started_at END,
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = $1 AND w.id = d.workflow_id
)
SELECT id, queue_name, status, retry_count, scheduled_at, workflow_id, completion_webhook,
       -- Wakes the promoter (possibly on another replica) for the earliest retry: one NOTIFY per statement.
       (SELECT pg_notify('spool_jobs', json_build_object('q', ARRAY[]::text[], 's', (extract(epoch FROM min(scheduled_at)) * 1000)::bigint)::text)
          FROM updated WHERE status = 'pending' HAVING count(*) > 0) IS NOT NULL AS notified,
       -- Read here so that the settle runs: the workflow UPDATE alone reads it only
       -- through its join, which never runs when the organization has no workflow.
       (SELECT count(*) FROM settled) AS dependents_settled
FROM updated;
