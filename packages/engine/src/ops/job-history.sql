-- The recorded transitions of one job, oldest first (the dashboard's timeline).
-- Served by job_history_job_idx (organization_id, job_id, id).
SELECT id, event, from_status, to_status, worker_id, lease_id, message, created_at
FROM spool.job_history
WHERE organization_id = $1 AND job_id = $2
ORDER BY id
LIMIT $3;
