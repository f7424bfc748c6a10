-- What a claim may take, in one place: job-claim.sql reads the claim index in
-- three ranges (the claim floor), and each range must carry jobs_claim_idx's
-- predicate to use the index. Written three times, one edited copy could
-- drift (a range claiming expired jobs, or losing the index). A view is
-- inlined into the query, so the planner still matches the partial index,
-- and FOR UPDATE through it locks the spool.jobs rows.
-- serves: ops/job-claim.sql
CREATE VIEW spool.claimable_jobs AS
SELECT id, organization_id, queue_name, priority, created_at
FROM spool.jobs
WHERE status = 'pending' AND dependencies_met IS NOT FALSE AND NOT in_backoff
  AND (scheduled_at IS NULL OR scheduled_at <= now())
  AND (expires_at IS NULL OR expires_at > now());
