-- A batch of a running replay failed ($3: why). The replay waits a second
-- per consecutive failure before its next batch; at the 5th it is failed
-- and its list of remaining jobs dropped (what was replayed stays
-- replayed). A replay that is no longer running is left alone.
WITH failed AS (
  UPDATE spool.dlq_replays r
  SET error = left($3::text, 2000),
      error_count = r.error_count + 1,
      status = CASE WHEN r.error_count + 1 >= 5 THEN 'failed' ELSE r.status END,
      finished_at = CASE WHEN r.error_count + 1 >= 5 THEN now() END,
      next_batch_at = now() + make_interval(secs => r.error_count + 1),
      updated_at = now()
  WHERE r.organization_id = $1 AND r.id = $2 AND r.status = 'running'
  RETURNING r.organization_id, r.id, r.status
),
dropped AS (
  DELETE FROM spool.dlq_replay_jobs i USING failed f
  WHERE f.status = 'failed' AND i.organization_id = f.organization_id AND i.replay_id = f.id
)
SELECT status FROM failed;
