-- Locks jobs (a dependent and its new dependencies) in id order, so that
-- concurrent dependency changes cannot deadlock, and returns their state as
-- of the lock (the latest committed version).
SELECT id, status, workflow_id, dependency_mode, dependencies_met, queue_name
FROM spool.jobs
WHERE organization_id = $1 AND id = ANY($2::uuid[])
ORDER BY id
FOR UPDATE;
