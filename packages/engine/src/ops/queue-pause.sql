-- Pauses a queue (creating its config row when needed): claims on it then
-- return nothing until it is resumed. Pausing again keeps the first paused_at.
-- A queue that was running gets a queue.paused event in the same statement
-- (one NOTIFY on spool_events). paused_at is null exactly while a queue runs,
-- so paused_at = now() says this statement paused it, even when a
-- concurrent first pause created the row after our snapshot.
WITH paused AS (
  INSERT INTO spool.queue_config AS q (organization_id, queue_name, enabled, paused_at, pause_reason)
  VALUES ($1, $2, false, now(), $3)
  ON CONFLICT (organization_id, queue_name) DO UPDATE
  SET enabled = false,
      paused_at = coalesce(q.paused_at, now()),
      pause_reason = EXCLUDED.pause_reason,
      updated_at = now()
  RETURNING q.*
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT p.organization_id, 'queue.paused', jsonb_build_object('queue_name', p.queue_name, 'reason', p.pause_reason)
  FROM paused p
  WHERE p.paused_at = now()
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT p.* FROM paused p LEFT JOIN notified ON true;
