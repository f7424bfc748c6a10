-- The claim's UPDATE finds the rows it has just locked by their tuple id
-- instead of a descent of jobs_pkey per row (docs/performance.md, "The
-- claim's UPDATE by tuple id"). The rows are locked FOR UPDATE by the same
-- statement, so no other transaction can give them a new version before the
-- UPDATE; `tid` is the locked version's.
CREATE OR REPLACE VIEW spool.claimable_jobs AS
SELECT id, organization_id, queue_name, priority, created_at, concurrency_key, fairness_key, ctid AS tid
FROM spool.jobs
WHERE status = 'pending' AND dependencies_met IS NOT FALSE AND NOT in_backoff
  AND (scheduled_at IS NULL OR scheduled_at <= now())
  AND (expires_at IS NULL OR expires_at > now());
