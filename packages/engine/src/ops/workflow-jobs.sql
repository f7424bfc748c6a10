-- The jobs of a workflow in creation order ($3: one job), each with the ids
-- of the jobs it depends on and, in the same order, each edge's
-- on_parent_failure (migration 035).
SELECT j.id, j.workflow_id, j.workflow_key AS key, j.queue_name, j.status, j.payload, j.result, j.last_error AS error,
       coalesce(e.depends_on, '{}') AS depends_on, coalesce(e.on_parent_failure, '{}') AS on_parent_failure,
       j.priority, j.max_retries, j.retry_count AS attempt, j.timeout_seconds, j.created_at, j.started_at, j.completed_at,
       j.dependency_mode, j.dependencies_met
FROM spool.jobs j
LEFT JOIN LATERAL (
  SELECT array_agg(d.depends_on_job_id ORDER BY d.depends_on_job_id) AS depends_on,
         array_agg(d.on_parent_failure ORDER BY d.depends_on_job_id) AS on_parent_failure
  FROM spool.job_dependencies d
  WHERE d.organization_id = j.organization_id AND d.job_id = j.id
) e ON true
WHERE j.organization_id = $1 AND j.workflow_id = $2 AND ($3::uuid IS NULL OR j.id = $3::uuid)
ORDER BY j.id;
