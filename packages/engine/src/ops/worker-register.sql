-- Registers a worker: healthy, with a heartbeat as of now.
INSERT INTO spool.workers (organization_id, queue_name, queue_names, hostname, worker_type, max_concurrency, metadata, version)
VALUES ($1, $2, $3::text[], $4, $5, $6, coalesce($7::jsonb, '{}'::jsonb), $8)
RETURNING *;
