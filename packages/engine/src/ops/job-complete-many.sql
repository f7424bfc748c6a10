-- Completes a batch of jobs, each fenced by worker and (when given) lease.
-- FOR UPDATE re-checks the fence after waiting on a concurrent writer, so of
-- several concurrent completes of one job exactly one matches.
WITH input AS (
  SELECT * FROM unnest($2::uuid[], $3::text[], $4::uuid[], $5::text[]) AS t(id, worker_id, lease_id, result)
),
target AS (
  SELECT j.id, j.lease_id AS held_lease_id, i.worker_id, i.result
  FROM spool.jobs j
  JOIN input i ON i.id = j.id
  WHERE j.organization_id = $1
    AND j.status = 'processing'
    AND j.assigned_worker_id = i.worker_id
    AND (i.lease_id IS NULL OR j.lease_id = i.lease_id)
  FOR UPDATE OF j
),
done AS (
  UPDATE spool.jobs j
  SET status = 'completed',
      result = t.result::jsonb,
      completed_at = now(),
      lease_id = NULL,
      lease_expires_at = NULL,
      cancel_requested_at = NULL,
      updated_at = now()
  FROM target t
  WHERE j.id = t.id
  RETURNING j.id, j.organization_id, j.queue_name, j.started_at, j.completed_at, j.workflow_id, j.completion_webhook,
            t.held_lease_id, t.worker_id
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id)
  SELECT organization_id, id, queue_name, 'complete', 'processing', 'completed', worker_id, held_lease_id FROM done
)
SELECT id, queue_name, started_at, completed_at, workflow_id, completion_webhook FROM done;
