-- The jobs of a workflow in creation order ($3: one job), each with the ids
-- of the jobs it depends on.
SELECT j.id, j.workflow_id, j.workflow_key AS key, j.queue_name, j.status, j.payload, j.result, j.last_error AS error,
       coalesce((SELECT array_agg(d.depends_on_job_id ORDER BY d.depends_on_job_id)
                 FROM spool.job_dependencies d
                 WHERE d.organization_id = j.organization_id AND d.job_id = j.id), '{}') AS depends_on,
       j.priority, j.max_retries, j.retry_count AS attempt, j.timeout_seconds, j.created_at, j.started_at, j.completed_at,
       j.dependency_mode, j.dependencies_met
FROM spool.jobs j
WHERE j.organization_id = $1 AND j.workflow_id = $2 AND ($3::uuid IS NULL OR j.id = $3::uuid)
ORDER BY j.id;
