-- Workflows of an organization, newest first ($2: one workflow; $3: status
-- filter). A pending workflow reads 'running' as soon as any of its jobs has
-- started: claims do not touch the workflow row (the claim is the hot path),
-- so the first start is derived here from the jobs. `queue_names`: the queues
-- of its jobs (authorization: visible with any of them, changeable with all);
-- $6, the caller's queues as LIKE patterns (NULL = all), keeps the visible ones.
SELECT *
FROM (
  SELECT w.id, w.organization_id, w.name, w.description,
         CASE WHEN w.status = 'pending' AND s.first_started IS NOT NULL THEN 'running' ELSE w.status END AS status,
         w.total_jobs, w.completed_jobs, w.failed_jobs, w.cancelled_jobs, w.blocked_jobs, w.metadata,
         w.created_at, coalesce(w.started_at, s.first_started) AS started_at, w.completed_at, w.updated_at,
         q.queue_names
  FROM spool.workflows w
  LEFT JOIN LATERAL (
    SELECT min(j.started_at) AS first_started
    FROM spool.jobs j
    WHERE j.organization_id = w.organization_id AND j.workflow_id = w.id AND w.started_at IS NULL
  ) s ON true
  LEFT JOIN LATERAL (
    SELECT coalesce(array_agg(DISTINCT j.queue_name::text), '{}'::text[]) AS queue_names
    FROM spool.jobs j
    WHERE j.organization_id = w.organization_id AND j.workflow_id = w.id
  ) q ON true
  WHERE w.organization_id = $1 AND ($2::uuid IS NULL OR w.id = $2::uuid)
) x
WHERE ($3::text IS NULL OR x.status = $3::text)
  AND ($6::text[] IS NULL OR EXISTS (SELECT 1 FROM unnest(x.queue_names) AS n(name) WHERE n.name LIKE ANY ($6::text[])))
ORDER BY created_at DESC, id DESC
LIMIT $4 OFFSET $5;
