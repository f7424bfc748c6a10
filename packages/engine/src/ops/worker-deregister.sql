-- Marks a worker offline. Its processing jobs are released by
-- job-release-worker.sql in the same transaction (see worker.ts). A worker
-- that was not offline yet gets worker.deregistered in the same statement
-- (one NOTIFY on spool_events); deregistering twice announces it once.
WITH prior AS (
  -- The row before this statement, locked (after a concurrent writer, its version).
  SELECT id, status FROM spool.workers WHERE organization_id = $1 AND id = $2 FOR UPDATE
),
deregistered AS (
  UPDATE spool.workers w
  SET status = 'offline', current_jobs = 0, updated_at = now()
  FROM prior p
  WHERE w.id = p.id
  RETURNING w.*
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT d.organization_id, 'worker.deregistered',
         jsonb_build_object('worker_id', d.id, 'queue_name', d.queue_name, 'hostname', d.hostname, 'reason', 'deregistered')
  FROM deregistered d
  JOIN prior p ON p.id = d.id
  WHERE p.status <> 'offline'
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT d.* FROM deregistered d LEFT JOIN notified ON true;
