-- Locks the config row of a capped queue (queue_config.capped: a
-- concurrency_limit, a rate_limit, a concurrency_key_limit or fair share),
-- so capped claims of that queue take turns: without the lock,
-- two claimers could each count the same free room (or the same tokens) and
-- together start more than the limit. Returns no row when the queue is
-- uncapped or paused (nothing to claim).
--
-- A rate-limited queue's token bucket (migrations 025, 033) is refilled here for
-- the time since the last claim, up to its burst, and up to $3 whole tokens
-- are taken at once for the claim that follows in this transaction
-- (job-claim.sql gives back what it does not use). `reserved` is NULL for a
-- queue without a rate limit; `tokens` is what is left in the bucket and
-- `rate` its refill per second, from which the caller tells a claim with no
-- token when the next ones come. clock_timestamp(), not now(): the lock may
-- have been waited for, and the time waited refills the bucket too.
WITH locked AS (
  SELECT q.id, q.concurrency_limit, q.rate_limit, q.fairness,
         spool.rate_burst(q.rate_limit, q.rate_limit_burst) AS burst,
         q.rate_tokens, q.rate_refilled_at
  FROM spool.queue_config q
  WHERE q.organization_id = $1 AND q.queue_name = $2
    AND q.enabled AND q.capped
  FOR UPDATE
),
bucket AS MATERIALIZED (
  SELECT l.id, l.burst, t.at, spool.rate_tokens_at(l.rate_tokens, l.rate_refilled_at, l.rate_limit, l.burst, t.at) AS available
  FROM locked l, LATERAL (SELECT clock_timestamp() AS at) t
  WHERE l.rate_limit IS NOT NULL
),
taken AS (
  UPDATE spool.queue_config q
  SET rate_tokens = b.available - least($3::int, floor(b.available)::int),
      rate_refilled_at = b.at
  FROM bucket b
  WHERE q.id = b.id
  RETURNING least($3::int, floor(b.available)::int) AS reserved, q.rate_tokens AS tokens, q.rate_limit AS rate, b.burst
)
SELECT l.concurrency_limit, l.fairness, t.reserved, t.tokens, t.rate, t.burst
FROM locked l LEFT JOIN taken t ON true;
