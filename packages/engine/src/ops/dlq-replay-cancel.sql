-- Cancels a running replay that the caller's queues ($3: LIKE patterns,
-- NULL = all) reach; $4 is who asks. The row lock waits for a batch in
-- flight, so the replay stops between two batches: what was replayed stays
-- replayed, the remaining list is dropped. A replay that is no longer
-- running is answered as it is (`cancelled` false), unchanged.
WITH found AS (
  SELECT r.*
  FROM spool.dlq_replays r
  WHERE r.organization_id = $1 AND r.id = $2
    AND spool.dlq_replay_within(r.queue_name, r.queue_scope, r.edit_queue_name, $3::text[])
  FOR UPDATE
),
cancelled AS (
  UPDATE spool.dlq_replays r
  SET status = 'cancelled', cancelled_by = $4::text, finished_at = now(), updated_at = now()
  FROM found f
  WHERE r.organization_id = f.organization_id AND r.id = f.id AND f.status = 'running'
  RETURNING r.*
),
dropped AS (
  DELETE FROM spool.dlq_replay_jobs i USING cancelled c
  WHERE i.organization_id = c.organization_id AND i.replay_id = c.id
)
SELECT c.*, now() AS read_at, true AS cancelled FROM cancelled c
UNION ALL
SELECT f.*, now(), false FROM found f WHERE NOT EXISTS (SELECT 1 FROM cancelled);
