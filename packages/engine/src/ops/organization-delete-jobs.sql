-- A deleted organization's jobs (their dead-letter rows go by cascade), job
-- history and queue activity history (migration 023). Run after
-- organization-delete.sql in its transaction: that delete waited for every
-- insert holding the organization's KEY SHARE lock, so this statement's
-- snapshot includes their jobs.
-- (Two deletes of jobs: the listing indexes do not hold processing rows,
-- migration 043.)
WITH jobs AS (
  DELETE FROM spool.jobs WHERE organization_id = $1 AND status <> 'processing'
),
running AS (
  DELETE FROM spool.jobs WHERE organization_id = $1 AND status = 'processing'
),
minutes AS (
  DELETE FROM spool.queue_stats_minute WHERE organization_id = $1
),
hours AS (
  DELETE FROM spool.queue_stats_hour WHERE organization_id = $1
)
DELETE FROM spool.job_history WHERE organization_id = $1;
