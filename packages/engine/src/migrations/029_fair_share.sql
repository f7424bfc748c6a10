-- Fair share (docs/jobs-api.md, "Fair share"): a job may carry a
-- fairness_key, and a queue whose config sets fairness 'round_robin' has
-- its claims take turns across the keys with claimable work instead of
-- draining the oldest first. Claims of such a queue take the capped path
-- (the config row locked), which keeps the turn in fair_cursor: the last
-- key served. fairness_weights maps a key to how many jobs it gets per
-- turn (default 1); the API takes and shows it as a list of {key, weight}.
ALTER TABLE spool.jobs
  ADD COLUMN fairness_key text CHECK (char_length(fairness_key) BETWEEN 1 AND 255);
ALTER TABLE spool.queue_config
  ADD COLUMN fairness text CHECK (fairness IN ('round_robin')),
  ADD COLUMN fairness_weights jsonb CHECK (jsonb_typeof(fairness_weights) = 'object'),
  ADD COLUMN fair_cursor text;

-- The keys with claimable work at a priority, in key order, and each key's
-- jobs oldest first: the fair claim skips from key to key through it. Only
-- jobs with a key have entries (the claim predicate of jobs_claim_idx, and
-- a key), so queues without fair share pay nothing.
-- serves: ops/job-claim.sql (fair_top, fair_after, fair_before, fair)
CREATE INDEX jobs_fair_idx ON spool.jobs (organization_id, queue_name, priority DESC, fairness_key, created_at, id)
  WHERE status = 'pending' AND dependencies_met IS NOT FALSE AND NOT in_backoff AND fairness_key IS NOT NULL;

CREATE OR REPLACE VIEW spool.claimable_jobs AS
SELECT id, organization_id, queue_name, priority, created_at, concurrency_key, fairness_key
FROM spool.jobs
WHERE status = 'pending' AND dependencies_met IS NOT FALSE AND NOT in_backoff
  AND (scheduled_at IS NULL OR scheduled_at <= now())
  AND (expires_at IS NULL OR expires_at > now());

-- Whether claims of a queue take the capped path (queue-lock-capped.sql):
-- written once here, read by the claim, the probe and the lock.
ALTER TABLE spool.queue_config
  ADD COLUMN capped boolean GENERATED ALWAYS AS (
    concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL OR concurrency_key_limit IS NOT NULL OR fairness IS NOT NULL) STORED;
