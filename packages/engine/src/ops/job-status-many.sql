-- Status of the given jobs that exist in the organization.
SELECT id, status, queue_name, retry_count, created_at, completed_at
FROM spool.jobs
WHERE organization_id = $1 AND id = ANY($2::uuid[]);
