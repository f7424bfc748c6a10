-- Extends a lease. Fenced: only the owning worker, and when it presents a
-- lease_id, only that exact lease. Returns nothing when the caller lost the job.
UPDATE spool.jobs
SET lease_expires_at = now() + make_interval(secs => $5),
    updated_at = now()
WHERE organization_id = $1
  AND id = $2
  AND status = 'processing'
  AND assigned_worker_id = $3
  AND ($4::uuid IS NULL OR lease_id = $4::uuid)
RETURNING id, lease_id, lease_expires_at, cancel_requested_at;
