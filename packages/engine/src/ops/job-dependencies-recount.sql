-- Recounts the dependencies of jobs $2 from scratch and sets
-- dependencies_remaining and dependencies_met. The caller must hold the
-- dependents' row locks from an earlier statement of this transaction
-- (ops/job-dependencies-lock.sql or job-dependents-lock.sql): this
-- statement's snapshot then includes every completion that reached them
-- first. Workflow blocked counters follow; one pg_notify if any job was
-- released. A dependency whose job no longer exists never completes.
-- An edge is satisfied when its parent completed, or when it ended without
-- success and the edge says on_parent_failure 'continue' (migration 035).
WITH counts AS (
  SELECT j.id, j.dependencies_met AS was_met,
         count(d.depends_on_job_id)::int AS total,
         (count(d.depends_on_job_id) FILTER (
            WHERE p.status IS DISTINCT FROM 'completed'
              AND NOT (d.on_parent_failure = 'continue' AND coalesce(p.status IN ('failed', 'deadletter', 'cancelled'), false))))::int AS remaining
  FROM spool.jobs j
  LEFT JOIN spool.job_dependencies d ON d.organization_id = j.organization_id AND d.job_id = j.id
  LEFT JOIN spool.jobs p ON p.id = d.depends_on_job_id AND p.organization_id = j.organization_id
  WHERE j.organization_id = $1 AND j.id = ANY($2::uuid[]) AND j.status IN ('pending', 'scheduled')
  GROUP BY j.id, j.dependencies_met
),
updated AS (
  UPDATE spool.jobs j
  SET dependencies_remaining = c.remaining,
      dependencies_met = CASE WHEN c.total = 0 THEN true
                              WHEN coalesce(j.dependency_mode, 'all') = 'any' THEN c.remaining < c.total
                              ELSE c.remaining = 0 END,
      updated_at = now()
  FROM counts c
  WHERE j.id = c.id
  RETURNING j.id, j.organization_id, j.queue_name, j.status, j.workflow_id, j.dependencies_met, c.was_met
),
workflow_delta AS (
  SELECT workflow_id,
         sum(CASE WHEN was_met IS FALSE AND dependencies_met THEN -1
                  WHEN was_met IS NOT FALSE AND NOT dependencies_met THEN 1
                  ELSE 0 END)::int AS blocked
  FROM updated
  WHERE workflow_id IS NOT NULL
  GROUP BY workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET blocked_jobs = greatest(w.blocked_jobs + d.blocked, 0),
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = $1 AND w.id = d.workflow_id AND d.blocked <> 0
)
SELECT id, dependencies_met, was_met,
       (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
          FROM updated WHERE dependencies_met AND was_met IS FALSE AND status = 'pending' HAVING count(*) > 0) IS NOT NULL AS notified
FROM updated;
