-- Records a worker heartbeat; a null parameter keeps the current value.
-- A heartbeat from a worker marked offline brings it back: that counts as
-- registering again (worker.registered, in the same statement, with one
-- NOTIFY on spool_events), since going offline was announced as deregistered.
WITH prior AS (
  -- The row before this statement, locked (after a concurrent writer, its version).
  SELECT id, status FROM spool.workers WHERE organization_id = $1 AND id = $2 FOR UPDATE
),
beat AS (
  UPDATE spool.workers w
  SET last_heartbeat = now(),
      current_jobs = coalesce($3, w.current_jobs),
      status = $4,
      metadata = coalesce($5::jsonb, w.metadata),
      updated_at = now()
  FROM prior p
  WHERE w.id = p.id
  RETURNING w.*
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT b.organization_id, 'worker.registered',
         jsonb_build_object('worker_id', b.id, 'queue_name', b.queue_name, 'hostname', b.hostname, 'revived', true)
  FROM beat b
  JOIN prior p ON p.id = b.id
  WHERE p.status = 'offline'
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT b.* FROM beat b LEFT JOIN notified ON true;
