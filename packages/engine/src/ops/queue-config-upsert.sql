-- Creates or updates a queue's config. A NULL parameter keeps the current
-- value (or the default for a new row). Disabling through config pauses.
-- $12 true clears concurrency_limit when $11 is NULL, $14 rate_limit when
-- $5 is, $15 rate_limit_burst when $13 is, $17 concurrency_key_limit when $16 is (the limits are nullable on the
-- wire: null means "no limit" or "the default", absent means "unchanged").
-- Sending default_timeout ($4) marks it chosen: jobs that take it have their
-- timeout enforced by the server (migration 026); $18 true (default_timeout
-- null on the wire) goes back to the built-in 300 s, not enforced.
-- $19 fairness and $21 fairness_weights (a key → weight object) are cleared
-- by $20 and $22.
-- Enabling or disabling writes queue.resumed / queue.paused in the same
-- statement (one NOTIFY on spool_events), as POST pause/resume do.
WITH prior AS (
  -- The row before this statement, locked (after a concurrent writer, its
  -- version). Read before the upsert: the INSERT's source depends on it.
  SELECT enabled FROM spool.queue_config WHERE organization_id = $1 AND queue_name = $2 FOR UPDATE
),
upserted AS (
  INSERT INTO spool.queue_config AS q (organization_id, queue_name, max_retries, default_timeout, rate_limit, enabled,
                                       paused_at, settings, backoff_base_ms, backoff_max_ms, backoff_jitter_ms, concurrency_limit,
                                       rate_limit_burst, concurrency_key_limit, default_timeout_set, fairness, fairness_weights)
  SELECT $1, $2, coalesce($3, 3), coalesce($4, 300), $5, coalesce($6, true),
         CASE WHEN coalesce($6, true) THEN NULL ELSE now() END,
         coalesce($7::jsonb, '{}'::jsonb), coalesce($8, 1000), coalesce($9, 60000), coalesce($10, 500), $11, $13, $16,
         $4 IS NOT NULL, $19, $21::jsonb
  FROM (SELECT count(*) FROM prior) AS read_first
  ON CONFLICT (organization_id, queue_name) DO UPDATE
  SET max_retries = coalesce($3, q.max_retries),
      default_timeout = CASE WHEN $18::boolean THEN 300 ELSE coalesce($4, q.default_timeout) END,
      default_timeout_set = CASE WHEN $18::boolean THEN false ELSE $4 IS NOT NULL OR q.default_timeout_set END,
      rate_limit = CASE WHEN $14::boolean THEN $5 ELSE coalesce($5, q.rate_limit) END,
      rate_limit_burst = CASE WHEN $15::boolean THEN $13 ELSE coalesce($13, q.rate_limit_burst) END,
      concurrency_key_limit = CASE WHEN $17::boolean THEN $16 ELSE coalesce($16, q.concurrency_key_limit) END,
      fairness = CASE WHEN $20::boolean THEN $19 ELSE coalesce($19, q.fairness) END,
      fairness_weights = CASE WHEN $22::boolean THEN $21::jsonb ELSE coalesce($21::jsonb, q.fairness_weights) END,
      enabled = coalesce($6, q.enabled),
      paused_at = CASE WHEN coalesce($6, q.enabled) THEN NULL ELSE coalesce(q.paused_at, now()) END,
      pause_reason = CASE WHEN coalesce($6, q.enabled) THEN NULL ELSE q.pause_reason END,
      settings = coalesce($7::jsonb, q.settings),
      backoff_base_ms = coalesce($8, q.backoff_base_ms),
      backoff_max_ms = coalesce($9, q.backoff_max_ms),
      backoff_jitter_ms = coalesce($10, q.backoff_jitter_ms),
      concurrency_limit = CASE WHEN $12::boolean THEN $11 ELSE coalesce($11, q.concurrency_limit) END,
      updated_at = now()
  RETURNING q.*
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT u.organization_id,
         CASE WHEN u.enabled THEN 'queue.resumed' ELSE 'queue.paused' END,
         CASE WHEN u.enabled THEN jsonb_build_object('queue_name', u.queue_name)
              ELSE jsonb_build_object('queue_name', u.queue_name, 'reason', u.pause_reason) END
  FROM upserted u
  WHERE CASE
          -- paused_at is null exactly while a queue runs: now() means this statement paused it
          WHEN NOT u.enabled THEN u.paused_at = now()
          WHEN EXISTS (SELECT 1 FROM prior) THEN NOT (SELECT enabled FROM prior)
          -- No row before us: a row we created was never paused; one another
          -- transaction created meanwhile may have been, so say resumed
          -- (a harmless repeat rather than a missed resume).
          ELSE u.created_at <> now()
        END
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT u.* FROM upserted u LEFT JOIN notified ON true;
