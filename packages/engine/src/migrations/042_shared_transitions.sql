-- Transitions that several statements make, written once as functions.

-- The retry: failed, dead-lettered or cancelled jobs back to pending,
-- claimable at once. POST /jobs/{id}/retry, POST /jobs/dlq/retry and a
-- workflow's retry (ops/job-retry-many.sql) and each batch of a DLQ replay
-- (ops/dlq-replay-batch.sql) select and lock their jobs in their own ways
-- and then move them here, so the move cannot drift apart between them.
--
-- The caller holds the jobs' row locks (its FOR UPDATE, in the arguments'
-- subquery); a job of another status is left alone. reset_retries: a fresh
-- retry budget (DLQ retry and replay, docs/compatibility.md §3.6), else one
-- more attempt (manual retry, §3.3). set_*: a replay's edits (NULL keeps the
-- job's value); the `retry` history row then lists what they changed, as an
-- `edit` row does (ops/job-edit.sql), after retry_details.
--
-- A retried job's continue edges (migration 035) counted as satisfied while
-- it had failed; they wait for it again: each still blocked dependent gets
-- them back in dependencies_remaining (only for stamped jobs, migration 024).
-- The dead-letter entry goes, a workflow no longer counts the job as failed
-- (or cancelled), and one pg_notify wakes the claimers of the queues.
--
-- SQL and VOLATILE: its one statement takes a fresh snapshot, which sees
-- the caller's locks and every edge committed before them. `recount` flags a
-- job that gained dependents in a transaction that snapshot cannot see (as
-- ops/job-complete-many.sql does): the caller recounts their dependencies
-- afterwards (ops/job-dependencies-recount.sql). The workflows are updated
-- here, so the calling statement must not update them (a row may not be
-- changed by a function's command and then by the calling command).
CREATE FUNCTION spool.job_retry(org_id uuid, job_ids uuid[], reset_retries boolean, retry_actor text, retry_details jsonb,
                                set_priority integer DEFAULT NULL, set_max_retries integer DEFAULT NULL,
                                set_queue_name spool.queue_name DEFAULT NULL)
RETURNS TABLE (job spool.jobs, from_status text, recount boolean)
LANGUAGE sql VOLATILE AS $$
WITH old AS (
  SELECT j.id, j.status, j.priority, j.max_retries, j.queue_name
  FROM spool.jobs j
  WHERE j.organization_id = org_id AND j.id = ANY (job_ids) AND j.status IN ('failed', 'deadletter', 'cancelled')
),
retried AS (
  UPDATE spool.jobs j
  SET status = 'pending', in_backoff = false,
      retry_count = CASE WHEN reset_retries THEN 0 ELSE j.retry_count + 1 END,
      last_error = NULL,
      scheduled_at = NULL,
      completed_at = NULL,
      result = NULL,
      assigned_worker_id = NULL,
      lease_id = NULL,
      lease_expires_at = NULL,
      cancel_requested_at = NULL,
      priority = coalesce(set_priority, j.priority),
      max_retries = coalesce(set_max_retries, j.max_retries),
      queue_name = coalesce(set_queue_name, j.queue_name),
      updated_at = now()
  FROM old o
  WHERE j.id = o.id
  RETURNING j AS job, j.id, j.organization_id, j.queue_name, j.priority, j.max_retries, j.workflow_id, j.dependents_xid,
            o.status AS from_status, o.priority AS old_priority, o.max_retries AS old_max_retries, o.queue_name AS old_queue_name
),
rewaiting AS (
  SELECT d.job_id, count(*)::int AS n
  FROM retried x
  JOIN spool.job_dependencies d
    ON d.organization_id = x.organization_id AND d.depends_on_job_id = x.id AND d.on_parent_failure <> 'block'
  WHERE x.dependents_xid IS NOT NULL AND d.on_parent_failure = 'continue'
  GROUP BY d.job_id
),
reblocked AS (
  UPDATE spool.jobs j
  SET dependencies_remaining = coalesce(j.dependencies_remaining, 0) + e.n, updated_at = now()
  FROM rewaiting e
  WHERE j.id = e.job_id AND j.organization_id = org_id
    AND j.status IN ('pending', 'scheduled') AND j.dependencies_met = false
),
unlisted AS (
  DELETE FROM spool.dead_letter_queue d USING retried x WHERE d.job_id = x.id
),
edited AS (
  SELECT x.*,
         array_remove(ARRAY[
           CASE WHEN x.priority <> x.old_priority THEN 'priority' END,
           CASE WHEN x.queue_name <> x.old_queue_name THEN 'queue_name' END,
           CASE WHEN x.max_retries <> x.old_max_retries THEN 'max_retries' END
         ], NULL) AS fields
  FROM retried x
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, actor, details)
  SELECT e.organization_id, e.id, e.queue_name, 'retry', e.from_status, 'pending', retry_actor,
         retry_details
         || CASE WHEN cardinality(e.fields) = 0 THEN '{}'::jsonb ELSE jsonb_build_object(
              'fields', to_jsonb(e.fields),
              'from', jsonb_strip_nulls(jsonb_build_object(
                'priority', CASE WHEN 'priority' = ANY (e.fields) THEN e.old_priority END,
                'queue_name', CASE WHEN 'queue_name' = ANY (e.fields) THEN e.old_queue_name END,
                'max_retries', CASE WHEN 'max_retries' = ANY (e.fields) THEN e.old_max_retries END)),
              'to', jsonb_strip_nulls(jsonb_build_object(
                'priority', CASE WHEN 'priority' = ANY (e.fields) THEN e.priority END,
                'queue_name', CASE WHEN 'queue_name' = ANY (e.fields) THEN e.queue_name END,
                'max_retries', CASE WHEN 'max_retries' = ANY (e.fields) THEN e.max_retries END))) END
  FROM edited e
),
-- A retried workflow job no longer counts as failed; a failed workflow runs
-- again (its status follows the counters, migration 011).
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
  WHERE w.organization_id = org_id AND w.id = d.workflow_id
)
SELECT x.job, x.from_status,
       x.dependents_xid IS NOT NULL AND NOT pg_visible_in_snapshot(x.dependents_xid, pg_current_snapshot()) AS recount
FROM retried x
-- Evaluated once, at the first row: none when nothing moved.
WHERE (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
         FROM retried HAVING count(*) > 0) IS NOT NULL
$$;

-- The fence of a worker's call on a job it holds (heartbeat, snooze,
-- progress, log, complete, fail; ops/job-*.sql): whether the caller holds
-- the job, from the job's row j, and if not, why not:
--  * held           processing (spelled as the lease it implies,
--                   jobs_lease_iff_processing), assigned to the caller's
--                   worker, with the presented lease when one is, and before
--                   the attempt's deadline (an enforced timeout, migration 026);
--  * timed_out      the caller's own attempt is past its deadline: it is
--                   over, and the lease reaper fails it as timed out;
--  * lease_mismatch a presented lease that is not the job's (409 LEASE_EXPIRED);
--  * not_owned      any other job (404 job_not_found_or_not_owned).
-- A statement applies it to the row it locks or updates, so a row that a
-- concurrent writer changed first is judged on its newest version (a lookup
-- of its own, with the statement's snapshot, would judge the old one).
-- ops/job-lease-state.sql explains a refusal with it, adding what the row
-- cannot tell: a missing job, and a lease the reaper already ended.
-- One SQL expression of its arguments: PostgreSQL inlines it into the
-- calling statement, which then reads the row's columns as before.
CREATE FUNCTION spool.job_fence(j spool.jobs, caller_worker_id text, caller_lease_id uuid)
RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN j.lease_id IS NOT NULL AND j.assigned_worker_id = caller_worker_id AND (caller_lease_id IS NULL OR j.lease_id = caller_lease_id)
      THEN CASE WHEN j.deadline_at IS NULL OR j.deadline_at > now() THEN 'held' ELSE 'timed_out' END
    WHEN caller_lease_id IS NOT NULL AND j.lease_id IS DISTINCT FROM caller_lease_id THEN 'lease_mismatch'
    ELSE 'not_owned'
  END
$$;
