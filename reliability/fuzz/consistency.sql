-- Database invariants after a fuzz run: one row per violation (none = consistent).
-- Leases: a job holds one exactly while processing (fencing relies on it).
SELECT 'processing job without a lease' AS problem, id::text AS subject
FROM spool.jobs
WHERE status = 'processing' AND (lease_id IS NULL OR lease_expires_at IS NULL OR assigned_worker_id IS NULL)
UNION ALL
SELECT 'finished job with a lease', id::text
FROM spool.jobs
WHERE status IN ('completed', 'failed', 'deadletter', 'cancelled') AND (lease_id IS NOT NULL OR lease_expires_at IS NOT NULL)
UNION ALL
SELECT 'unfinished job with completed_at, or finished one without', id::text
FROM spool.jobs
WHERE (status IN ('completed', 'failed', 'deadletter', 'cancelled')) <> (completed_at IS NOT NULL)
UNION ALL
-- History (each job's timeline, as GET /jobs/{id}/history tells it): every
-- job has a recorded create event (not one told from its columns, id 0), the
-- last transition lands on the current status, and every transition starts
-- where the previous one ended.
SELECT 'job without a create row in its history', j.id::text
FROM spool.jobs j
WHERE NOT EXISTS (SELECT 1 FROM spool.job_timeline(j.organization_id, j.id) t WHERE t.event = 'create' AND t.id > 0)
UNION ALL
SELECT 'status ' || j.status || ' but the last transition went to ' || coalesce(last.to_status, 'nothing'), j.id::text
FROM spool.jobs j
LEFT JOIN LATERAL (
  SELECT t.to_status FROM spool.job_timeline(j.organization_id, j.id) t
  WHERE t.to_status IS NOT NULL
  ORDER BY t.id DESC LIMIT 1
) last ON true
WHERE last.to_status IS DISTINCT FROM j.status
UNION ALL
SELECT 'transition ' || t.event || ' from ' || t.from_status || ' follows one to ' || t.previous, j.id::text
FROM spool.jobs j
CROSS JOIN LATERAL (
  SELECT h.event, h.from_status, lag(h.to_status) OVER (ORDER BY h.id) AS previous
  FROM spool.job_timeline(j.organization_id, j.id) h
  WHERE h.from_status IS NOT NULL OR h.event = 'create'
) t
WHERE t.from_status IS NOT NULL AND t.previous IS NOT NULL AND t.from_status <> t.previous
UNION ALL
-- The dead-letter list holds exactly the dead-lettered jobs.
SELECT 'deadletter job missing from the dead-letter queue', j.id::text
FROM spool.jobs j
WHERE j.status = 'deadletter' AND NOT EXISTS (SELECT 1 FROM spool.dead_letter_queue d WHERE d.job_id = j.id)
UNION ALL
SELECT 'dead-letter entry of a job that is ' || j.status, j.id::text
FROM spool.dead_letter_queue d JOIN spool.jobs j ON j.id = d.job_id
WHERE j.status <> 'deadletter'
UNION ALL
-- Counters kept beside the rows they count.
SELECT 'workflow counters disagree with its jobs: ' || row(w.total_jobs, w.completed_jobs, w.failed_jobs, w.cancelled_jobs)::text
       || ' vs ' || row(c.total, c.completed, c.failed, c.cancelled)::text, w.id::text
FROM spool.workflows w
JOIN LATERAL (
  SELECT count(*)::int AS total,
         count(*) FILTER (WHERE status = 'completed')::int AS completed,
         count(*) FILTER (WHERE status IN ('failed', 'deadletter'))::int AS failed,
         count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled
  FROM spool.jobs j WHERE j.organization_id = w.organization_id AND j.workflow_id = w.id
) c ON true
-- Purged or retention-deleted jobs leave the counters behind on purpose.
WHERE c.total = w.total_jobs
  AND (w.completed_jobs, w.failed_jobs, w.cancelled_jobs) IS DISTINCT FROM (c.completed, c.failed, c.cancelled)
UNION ALL
-- An edge is satisfied by a completed parent, or (on_parent_failure
-- 'continue', migration 035) by one that ended without success; a released
-- job's continue edges stay satisfied even if their parent was retried since.
SELECT 'dependencies_remaining ' || j.dependencies_remaining || ' but ' || c.remaining || ' dependencies are not satisfied', j.id::text
FROM spool.jobs j
JOIN LATERAL (
  SELECT count(*) FILTER (WHERE p.status IS DISTINCT FROM 'completed'
                            AND NOT (d.on_parent_failure = 'continue'
                                     AND (j.dependencies_met OR coalesce(p.status IN ('failed', 'deadletter', 'cancelled'), false))))::int AS remaining
  FROM spool.job_dependencies d LEFT JOIN spool.jobs p ON p.id = d.depends_on_job_id
  WHERE d.organization_id = j.organization_id AND d.job_id = j.id
) c ON true
WHERE j.status IN ('pending', 'scheduled') AND j.dependencies_remaining IS NOT NULL AND j.dependencies_remaining <> c.remaining
