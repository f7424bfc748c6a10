-- A job's dependencies (kind 'dependency') and dependents (kind 'dependent')
-- with their current queue and status (null when the job no longer exists)
-- and each edge's on_parent_failure (migration 035).
SELECT 'dependency' AS kind, d.depends_on_job_id AS job_id, p.queue_name, p.status, d.dependency_type, d.on_parent_failure, d.created_at
FROM spool.job_dependencies d
LEFT JOIN spool.jobs p ON p.id = d.depends_on_job_id AND p.organization_id = d.organization_id
WHERE d.organization_id = $1 AND d.job_id = $2
UNION ALL
SELECT 'dependent', d.job_id, c.queue_name, c.status, d.dependency_type, d.on_parent_failure, d.created_at
FROM spool.job_dependencies d
LEFT JOIN spool.jobs c ON c.id = d.job_id AND c.organization_id = d.organization_id
WHERE d.organization_id = $1 AND d.depends_on_job_id = $2
ORDER BY created_at, job_id;
