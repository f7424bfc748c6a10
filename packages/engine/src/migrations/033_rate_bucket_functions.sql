-- A rate-limited queue's token bucket (migration 025), written once: the
-- claim's lock (queue-lock-capped.sql) takes from it, the explain read
-- (job-explain.sql) only looks. Plain SQL functions: the planner inlines them.

-- The bucket's size: rate_limit_burst, else a tenth of a second's worth of
-- the rate, at least 1 (docs/jobs-api.md, "Rate limits").
CREATE FUNCTION spool.rate_burst(rate_limit integer, rate_limit_burst integer) RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN coalesce(rate_limit_burst, greatest(1, ceil(rate_limit / 10.0)))::integer;

-- The tokens in the bucket at `at`: what was left at the last claim plus the
-- refill since, up to the burst. A bucket never claimed from (NULL) is full.
CREATE FUNCTION spool.rate_tokens_at(tokens double precision, refilled_at timestamptz, rate_limit integer, burst integer, at timestamptz)
  RETURNS double precision
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN least(burst::double precision, coalesce(tokens + greatest(0, extract(epoch FROM at - refilled_at)) * rate_limit, burst));
