-- Pauses a queue (creating its config row when needed): claims on it then
-- return nothing until it is resumed. Pausing again keeps the first paused_at.
INSERT INTO spool.queue_config AS q (organization_id, queue_name, enabled, paused_at, pause_reason)
VALUES ($1, $2, false, now(), $3)
ON CONFLICT (organization_id, queue_name) DO UPDATE
SET enabled = false,
    paused_at = coalesce(q.paused_at, now()),
    pause_reason = EXCLUDED.pause_reason,
    updated_at = now()
RETURNING *;
