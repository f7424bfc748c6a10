-- A failed job waiting out its retry backoff is `pending` on the wire
-- (docs/compatibility.md §3.4), but it must not sit in the claim index: with 100,000 jobs
-- in backoff during an outage every claim stepped over all of them
-- (100-350 ms per claim), and docs/design.md §4 says claim cost must not grow with
-- future-scheduled jobs. `in_backoff` takes such rows out of the claim index
-- until the promoter (which already wakes for scheduled jobs) clears it at
-- scheduled_at and wakes the queue's claimers.
ALTER TABLE spool.jobs ADD COLUMN in_backoff boolean NOT NULL DEFAULT false;
ALTER TABLE spool.jobs ADD CONSTRAINT jobs_backoff_only_pending
  CHECK (NOT in_backoff OR (status = 'pending' AND scheduled_at IS NOT NULL)) NOT VALID;
ALTER TABLE spool.jobs VALIDATE CONSTRAINT jobs_backoff_only_pending;

DROP INDEX spool.jobs_claim_idx;
-- serves: ops/job-claim.sql. The predicate matches the claim's WHERE exactly.
CREATE INDEX jobs_claim_idx ON spool.jobs (organization_id, queue_name, priority DESC, created_at, id)
  WHERE status = 'pending' AND dependencies_met IS NOT FALSE AND NOT in_backoff;
-- serves: ops/job-promote-scheduled.sql (retries whose backoff ended) and ops/job-next-scheduled.sql
CREATE INDEX jobs_backoff_idx ON spool.jobs (scheduled_at) WHERE in_backoff;
