-- Explains a fenced operation that changed nothing: missing job, not
-- processing, another owner, or another lease.
SELECT id, status, assigned_worker_id, lease_id
FROM spool.jobs
WHERE organization_id = $1 AND id = ANY($2::uuid[]);
