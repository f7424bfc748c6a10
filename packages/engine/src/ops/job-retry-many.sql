-- Puts failed or dead-lettered jobs back to pending, claimable now. Used by
-- the manual retry ($5 = false: retry_count + 1, docs/compatibility.md §3.3) and by the
-- DLQ replay ($5 = true: retry_count reset to 0, docs/compatibility.md §3.6). Selection:
-- the given ids ($2), else the oldest $4 of queue $3, else of the organization;
-- always only of the caller's queues ($7: LIKE patterns, NULL = all).
-- $8: who asked (job_history.actor, migration 031), NULL when unknown.
-- A retried job's continue edges (migration 035) counted as satisfied while
-- it had failed; they wait for it again: each still blocked dependent gets
-- them back in dependencies_remaining (only for stamped jobs, migration 024).
-- `recount` flags a retried job that gained dependents in a transaction
-- this statement's snapshot cannot see (as job-complete-many.sql's): the
-- caller recounts those dependents afterwards.
WITH target AS (
  SELECT id, status
  FROM spool.jobs
  WHERE organization_id = $1
    AND status = ANY($6::text[])
    AND ($2::uuid[] IS NULL OR id = ANY($2::uuid[]))
    AND ($3::text IS NULL OR queue_name = $3::text)
    AND ($7::text[] IS NULL OR queue_name LIKE ANY ($7::text[]))
  ORDER BY created_at ASC, id ASC
  LIMIT $4
  FOR UPDATE SKIP LOCKED
),
retried AS (
  UPDATE spool.jobs j
  SET status = 'pending', in_backoff = false,
      retry_count = CASE WHEN $5::boolean THEN 0 ELSE j.retry_count + 1 END,
      last_error = NULL,
      scheduled_at = NULL,
      completed_at = NULL,
      result = NULL,
      assigned_worker_id = NULL,
      lease_id = NULL,
      lease_expires_at = NULL,
      cancel_requested_at = NULL,
      updated_at = now()
  FROM target t
  WHERE j.id = t.id
  RETURNING j.*, t.status AS from_status
),
rewaiting AS (
  SELECT d.job_id, count(*)::int AS n
  FROM retried r
  JOIN spool.job_dependencies d
    ON d.organization_id = r.organization_id AND d.depends_on_job_id = r.id AND d.on_parent_failure <> 'block'
  WHERE r.dependents_xid IS NOT NULL AND d.on_parent_failure = 'continue'
  GROUP BY d.job_id
),
reblocked AS (
  UPDATE spool.jobs j
  SET dependencies_remaining = coalesce(j.dependencies_remaining, 0) + e.n, updated_at = now()
  FROM rewaiting e
  WHERE j.id = e.job_id AND j.organization_id = $1
    AND j.status IN ('pending', 'scheduled') AND j.dependencies_met = false
),
unlisted AS (
  DELETE FROM spool.dead_letter_queue d USING retried r WHERE d.job_id = r.id
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, actor)
  SELECT organization_id, id, queue_name, 'retry', from_status, 'pending', $8::text FROM retried
),
-- A retried workflow job no longer counts as failed; a failed workflow runs again.
workflow_delta AS (
  SELECT workflow_id,
         count(*) FILTER (WHERE from_status IN ('failed', 'deadletter'))::int AS failed,
         count(*) FILTER (WHERE from_status = 'cancelled')::int AS cancelled
  FROM retried
  WHERE workflow_id IS NOT NULL
  GROUP BY workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET failed_jobs = greatest(w.failed_jobs - d.failed, 0),
      cancelled_jobs = greatest(w.cancelled_jobs - d.cancelled, 0),
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = $1 AND w.id = d.workflow_id
)
SELECT r.*,
       CASE WHEN r.dependents_xid IS NULL THEN false
            ELSE NOT pg_visible_in_snapshot(r.dependents_xid, pg_current_snapshot()) END AS recount,
       (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
          FROM retried HAVING count(*) > 0) IS NOT NULL AS notified
FROM retried r;
