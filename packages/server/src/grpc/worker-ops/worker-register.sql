-- TODO(fold into engine ops): registers a worker; the engine's worker-* ops replace this file.
INSERT INTO spool.workers (organization_id, queue_name, queue_names, hostname, worker_type, max_concurrency, metadata, version)
VALUES ($1, $2, ARRAY[$2], $3, $4, $5, $6::jsonb, $7)
RETURNING id, queue_name, status, registered_at;
