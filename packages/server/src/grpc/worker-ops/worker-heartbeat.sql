-- TODO(fold into engine ops): records a worker heartbeat; nothing when the worker is unknown.
UPDATE spool.workers
SET last_heartbeat = now(),
    current_jobs = $3,
    status = $4,
    metadata = coalesce($5::jsonb, metadata),
    updated_at = now()
WHERE organization_id = $1 AND id = $2
RETURNING id, status;
