-- Marks a worker offline. Its processing jobs are released by
-- job-release-worker.sql in the same transaction (see worker.ts).
UPDATE spool.workers
SET status = 'offline', current_jobs = 0, updated_at = now()
WHERE organization_id = $1 AND id = $2
RETURNING *;
