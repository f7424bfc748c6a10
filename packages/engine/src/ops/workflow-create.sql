-- Creates a workflow with all its jobs and dependency edges in one statement.
-- Jobs without dependencies are claimable at once; the others are pending
-- with dependencies_met = false (outside the claim index) until released by
-- the completion of their dependencies (ops/job-complete-many.sql).
-- One pg_notify for the statement, naming the queues of the claimable jobs.
WITH workflow AS (
  INSERT INTO spool.workflows (id, organization_id, name, description, metadata, total_jobs, blocked_jobs)
  VALUES ($1, $2, $3, $4, $5::jsonb, cardinality($6::uuid[]),
          (SELECT count(*) FROM unnest($14::int[]) AS n WHERE n > 0))
  RETURNING id
),
input AS (
  SELECT *
  FROM unnest($6::uuid[], $7::text[], $8::text[], $9::text[], $10::int[], $11::int[], $12::int[], $13::text[], $14::int[])
       AS t(id, key, queue_name, payload, priority, max_retries, timeout_seconds, dependency_mode, dependency_count)
),
-- A job without its own max_retries / timeout_seconds takes its queue's
-- configured defaults, else $17 / $18, and a chosen timeout is enforced (as
-- job-insert-many.sql).
defaults AS (
  SELECT q.queue_name, q.max_retries, q.default_timeout, q.default_timeout_set
  FROM spool.queue_config q
  WHERE q.organization_id = $2
    AND q.queue_name IN (SELECT DISTINCT queue_name FROM input WHERE max_retries IS NULL OR timeout_seconds IS NULL)
),
inserted AS (
  INSERT INTO spool.jobs (id, organization_id, queue_name, status, payload, priority, max_retries, timeout_seconds,
                          workflow_id, workflow_key, dependency_mode, dependencies_met, dependencies_remaining, dependents_xid,
                          timeout_enforced)
  SELECT i.id, $2, i.queue_name, 'pending', i.payload::jsonb, i.priority,
         coalesce(i.max_retries, d.max_retries, $17::int), coalesce(i.timeout_seconds, d.default_timeout, $18::int),
         $1, i.key, i.dependency_mode, i.dependency_count = 0, i.dependency_count,
         -- a job others depend on is stamped (migration 024): its completion looks for dependents
         CASE WHEN i.id = ANY ($16::uuid[]) THEN pg_current_xact_id() END,
         i.timeout_seconds IS NOT NULL OR coalesce(d.default_timeout_set, false)
  FROM input i
  LEFT JOIN defaults d ON d.queue_name = i.queue_name
  RETURNING id, organization_id, queue_name, dependencies_met
),
-- $19: each edge's on_parent_failure (migration 035), the job's or the workflow's choice.
edges AS (
  INSERT INTO spool.job_dependencies (organization_id, job_id, depends_on_job_id, on_parent_failure)
  SELECT $2, e.job_id, e.depends_on_job_id, e.on_parent_failure
  FROM unnest($15::uuid[], $16::uuid[], $19::text[]) AS e(job_id, depends_on_job_id, on_parent_failure)
),
history AS (
  INSERT INTO spool.job_history (organization_id, queue_name, event, from_status, to_status, job_ids)
  SELECT organization_id, queue_name, 'create', NULL, 'pending', array_agg(id)
  FROM (SELECT organization_id, queue_name, id,
               (row_number() OVER (PARTITION BY organization_id, queue_name) - 1) / 1024 AS chunk
        FROM inserted) c
  GROUP BY organization_id, queue_name, chunk
)
SELECT (SELECT id FROM workflow) AS workflow_id,
       (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
          FROM inserted WHERE dependencies_met HAVING count(*) > 0) IS NOT NULL AS notified;
