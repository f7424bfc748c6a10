-- Records a worker heartbeat; a null parameter keeps the current value.
-- A heartbeat from a worker marked offline brings it back.
UPDATE spool.workers
SET last_heartbeat = now(),
    current_jobs = coalesce($3, current_jobs),
    status = $4,
    metadata = coalesce($5::jsonb, metadata),
    updated_at = now()
WHERE organization_id = $1 AND id = $2
RETURNING *;
