-- Settles dependents $3 of jobs $2 that have already ended without success
-- (spool.job_dependents_settle, migration 035), outside a statement that
-- ends them: a dependency added with on_parent_failure 'cancel' to a job
-- that is already dead-lettered, failed or cancelled cancels the dependent
-- at once, as the parent's failure would have (and its own dependents follow
-- their edges). Only the new dependents are named: the parent's earlier ones
-- were settled when it ended. Workflow counters follow here, as in the
-- statements that end jobs.
WITH settled AS MATERIALIZED (
  SELECT * FROM spool.job_dependents_settle($2::uuid[], $3::uuid[])
),
workflow AS (
  UPDATE spool.workflows w
  SET cancelled_jobs = w.cancelled_jobs + d.cancelled,
      blocked_jobs = greatest(w.blocked_jobs - d.unblocked, 0),
      updated_at = now()
  FROM settled d
  WHERE w.organization_id = $1 AND w.id = d.workflow_id
)
SELECT coalesce(sum(cancelled), 0)::int AS cancelled FROM settled;
