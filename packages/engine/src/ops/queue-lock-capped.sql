-- A capped claim's queue lock, taken in its own statement before the claim
-- (job-claim.ts, claimCapped): the claim statement then takes its snapshot
-- after the wait for the lock, so it does not walk jobs that the previous
-- holders claimed and whose workers have completed them since. Those rows
-- have moved to spool.jobs_done, and locking a moved row fails with 40001
-- where an in-place update was re-checked (migration 046). The claim's own
-- FOR UPDATE of the row then finds it held by its transaction.
SELECT 1
FROM spool.queue_config
WHERE organization_id = $1 AND queue_name = $2
  AND enabled AND capped
FOR UPDATE;
