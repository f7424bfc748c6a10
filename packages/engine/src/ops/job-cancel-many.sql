-- Cancels jobs. Pending and scheduled jobs end at once (guaranteed: a job
-- cancelled here is never claimed). Processing jobs get a cancel-requested
-- mark that the worker learns from its next heartbeat; the job ends cancelled
-- when the worker reports back; asking again changes nothing and writes no
-- second history row. Returns one row per job that exists.
WITH target AS (
  SELECT id, status, cancel_requested_at
  FROM spool.jobs
  WHERE organization_id = $1 AND id = ANY($2::uuid[])
  FOR UPDATE
),
cancelled AS (
  UPDATE spool.jobs j
  SET status = 'cancelled', in_backoff = false, completed_at = now(), updated_at = now()
  FROM target t
  WHERE j.id = t.id AND t.status IN ('pending', 'scheduled')
  RETURNING j.id, j.organization_id, j.queue_name, t.status AS from_status
),
requested AS (
  UPDATE spool.jobs j
  SET cancel_requested_at = now(), updated_at = now()
  FROM target t
  WHERE j.id = t.id AND t.status = 'processing' AND t.cancel_requested_at IS NULL
  RETURNING j.id, j.organization_id, j.queue_name, j.assigned_worker_id, j.lease_id
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id)
  SELECT organization_id, id, queue_name, 'cancel', from_status, 'cancelled', NULL, NULL FROM cancelled
  UNION ALL
  SELECT organization_id, id, queue_name, 'cancel_requested', 'processing', 'processing', assigned_worker_id, lease_id FROM requested
)
SELECT t.id, t.status AS previous_status,
       CASE WHEN c.id IS NOT NULL THEN 'cancelled'
            WHEN t.status = 'processing' THEN 'cancel_requested'
            ELSE 'conflict' END AS outcome
FROM target t
LEFT JOIN cancelled c ON c.id = t.id;
