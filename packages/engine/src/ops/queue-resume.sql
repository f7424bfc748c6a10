-- Resumes a paused queue and wakes waiting claimers of it. Returns nothing
-- when the queue has no config row. A queue that was paused gets a
-- queue.resumed event in the same statement (one NOTIFY on spool_events).
WITH before AS (
  SELECT id, paused_at FROM spool.queue_config WHERE organization_id = $1 AND queue_name = $2 FOR UPDATE
),
resumed AS (
  UPDATE spool.queue_config q
  SET enabled = true, paused_at = NULL, pause_reason = NULL, updated_at = now()
  FROM before b
  WHERE q.id = b.id
  RETURNING q.*, b.paused_at AS was_paused_at
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT r.organization_id, 'queue.resumed', jsonb_build_object(
           'queue_name', r.queue_name, 'paused_duration_secs', floor(extract(epoch FROM now() - r.was_paused_at))::int)
  FROM resumed r
  WHERE r.was_paused_at IS NOT NULL
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT r.*,
       coalesce(floor(extract(epoch FROM now() - r.was_paused_at)), 0)::int AS paused_duration_secs,
       pg_notify('spool_jobs', json_build_object('q', ARRAY[r.organization_id::text || ':' || r.queue_name])::text) IS NOT NULL AS notified
FROM resumed r LEFT JOIN notified ON true;
