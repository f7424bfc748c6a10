-- Creates or updates a queue's config. A NULL parameter keeps the current
-- value (or the default for a new row). Disabling through config pauses.
-- $12 true clears concurrency_limit when $11 is NULL (the limit is
-- nullable on the wire: null means "no limit", absent means "unchanged").
INSERT INTO spool.queue_config AS q (organization_id, queue_name, max_retries, default_timeout, rate_limit, enabled,
                                     paused_at, settings, backoff_base_ms, backoff_max_ms, backoff_jitter_ms, concurrency_limit)
VALUES ($1, $2, coalesce($3, 3), coalesce($4, 300), $5, coalesce($6, true),
        CASE WHEN coalesce($6, true) THEN NULL ELSE now() END,
        coalesce($7::jsonb, '{}'::jsonb), coalesce($8, 1000), coalesce($9, 60000), coalesce($10, 500), $11)
ON CONFLICT (organization_id, queue_name) DO UPDATE
SET max_retries = coalesce($3, q.max_retries),
    default_timeout = coalesce($4, q.default_timeout),
    rate_limit = coalesce($5, q.rate_limit),
    enabled = coalesce($6, q.enabled),
    paused_at = CASE WHEN coalesce($6, q.enabled) THEN NULL ELSE coalesce(q.paused_at, now()) END,
    pause_reason = CASE WHEN coalesce($6, q.enabled) THEN NULL ELSE q.pause_reason END,
    settings = coalesce($7::jsonb, q.settings),
    backoff_base_ms = coalesce($8, q.backoff_base_ms),
    backoff_max_ms = coalesce($9, q.backoff_max_ms),
    backoff_jitter_ms = coalesce($10, q.backoff_jitter_ms),
    concurrency_limit = CASE WHEN $12::boolean THEN $11 ELSE coalesce($11, q.concurrency_limit) END,
    updated_at = now()
RETURNING *;
