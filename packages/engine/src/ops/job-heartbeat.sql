-- Extends a lease. Fenced: only the owning worker, and when it presents a
-- lease_id, only that exact lease. Returns nothing when the caller lost the
-- job. An attempt with a deadline (an enforced timeout, migration 026) is
-- never extended past it, and once it passed the attempt is over: nothing is
-- returned, and the lease reaper fails the job as timed out.
UPDATE spool.jobs
SET lease_expires_at = least(now() + make_interval(secs => $5), deadline_at),
    updated_at = now()
WHERE organization_id = $1
  AND id = $2
  AND status = 'processing'
  AND assigned_worker_id = $3
  AND ($4::uuid IS NULL OR lease_id = $4::uuid)
  AND (deadline_at IS NULL OR deadline_at > now())
RETURNING id, lease_id, lease_expires_at, cancel_requested_at, deadline_at;
