-- Registers a worker: healthy, with a heartbeat as of now. Writes
-- worker.registered in the same statement (one NOTIFY on spool_events).
WITH registered AS (
  INSERT INTO spool.workers (organization_id, queue_name, queue_names, hostname, worker_type, max_concurrency, metadata, version)
  VALUES ($1, $2, $3::text[], $4, $5, $6, coalesce($7::jsonb, '{}'::jsonb), $8)
  RETURNING *
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT r.organization_id, 'worker.registered', jsonb_build_object('worker_id', r.id, 'queue_name', r.queue_name, 'hostname', r.hostname)
  FROM registered r
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT r.* FROM registered r LEFT JOIN notified ON true;
