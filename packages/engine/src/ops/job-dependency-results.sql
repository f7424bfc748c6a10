-- What the dependencies of job $2 ended with (GET /jobs/{id}/dependencies/results):
-- each one's status, result and, when it did not complete, its last error,
-- with the edge's on_parent_failure (migration 035), in the order the edges
-- were added. No row: no such job; one row with a null job_id: a job
-- without dependencies (of those queues). $3: the caller's queues as LIKE
-- patterns (NULL: every queue); a dependency of another queue, or one whose
-- job no longer exists, is left out for a caller limited to some queues.
-- Found through the edges' primary key and one jobs_pkey probe per dependency.
SELECT r.*
FROM spool.jobs j
LEFT JOIN LATERAL (
  SELECT d.depends_on_job_id AS job_id, p.workflow_key AS key, p.queue_name, p.status, p.result,
         CASE WHEN p.status IS DISTINCT FROM 'completed' THEN p.last_error END AS error,
         p.completed_at, d.dependency_type, d.on_parent_failure
  FROM spool.job_dependencies d
  LEFT JOIN spool.jobs p ON p.organization_id = d.organization_id AND p.id = d.depends_on_job_id
  WHERE d.organization_id = j.organization_id AND d.job_id = j.id
    AND ($3::text[] IS NULL OR p.queue_name LIKE ANY ($3::text[]))
  ORDER BY d.created_at, d.depends_on_job_id
  LIMIT $4 OFFSET $5
) r ON true
WHERE j.organization_id = $1 AND j.id = $2;
