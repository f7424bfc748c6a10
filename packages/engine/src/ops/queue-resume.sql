-- Resumes a paused queue and wakes waiting claimers of it. Returns nothing
-- when the queue has no config row.
WITH before AS (
  SELECT id, paused_at FROM spool.queue_config WHERE organization_id = $1 AND queue_name = $2 FOR UPDATE
),
resumed AS (
  UPDATE spool.queue_config q
  SET enabled = true, paused_at = NULL, pause_reason = NULL, updated_at = now()
  FROM before b
  WHERE q.id = b.id
  RETURNING q.*, b.paused_at AS was_paused_at
)
SELECT r.*,
       coalesce(floor(extract(epoch FROM now() - r.was_paused_at)), 0)::int AS paused_duration_secs,
       pg_notify('spool_jobs', json_build_object('q', ARRAY[r.organization_id::text || ':' || r.queue_name])::text) IS NOT NULL AS notified
FROM resumed r;
