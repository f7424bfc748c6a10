-- Extends a lease. Fenced (spool.job_fence, migration 042): only the owning
-- worker, only the presented lease when it presents one, and only before the
-- attempt's deadline. Returns nothing when the caller lost the job. An
-- attempt with a deadline (an enforced timeout, migration 026) is never
-- extended past it, and once it passed the attempt is over: nothing is
-- returned, and the lease reaper fails the job as timed out.
UPDATE spool.jobs j
SET lease_expires_at = least(now() + make_interval(secs => $5), j.deadline_at),
    updated_at = now()
WHERE j.organization_id = $1
  AND j.phase = 'live' -- a finished job holds no lease; the planner prunes jobs_done
  AND j.id = $2
  AND spool.job_fence(j, $3::text, $4::uuid) = 'held'
RETURNING j.id, j.lease_id, j.lease_expires_at, j.cancel_requested_at, j.deadline_at;
