-- A queue's rate_limit (jobs started per second across every worker and
-- replica) is enforced as a token bucket kept on the config row: claims of
-- a rate-limited queue already lock that row (queue-lock-capped.sql), so the
-- bucket needs no lock of its own and stays exact across replicas.
--   rate_limit_burst: the bucket's size, NULL = a tenth of a second's worth
--     (at least 1), so any window of a second or more stays within 10% of
--     the rate (docs/jobs-api.md, "Rate limits").
--   rate_tokens, rate_refilled_at: the bucket as of the last claim; NULL =
--     full. Refilled at claim time from clock_timestamp(), never by a timer.
ALTER TABLE spool.queue_config
  ADD COLUMN rate_limit_burst integer CHECK (rate_limit_burst BETWEEN 1 AND 100000),
  ADD COLUMN rate_tokens double precision,
  ADD COLUMN rate_refilled_at timestamptz;
