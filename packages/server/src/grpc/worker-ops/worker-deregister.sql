-- TODO(fold into engine ops): marks a worker offline; the caller releases its processing
-- jobs in the same transaction (engine jobReleaseWorker).
UPDATE spool.workers
SET status = 'offline', current_jobs = 0, updated_at = now()
WHERE organization_id = $1 AND id = $2
RETURNING id;
