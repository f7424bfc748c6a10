-- A deleted organization's jobs with their dead-letter rows and idempotency
-- keys (migration 046), job history, queue activity history (migration 023)
-- and keyed answers (migration 045). Run after organization-delete.sql in its transaction:
-- that delete waited for every insert holding the organization's KEY SHARE
-- lock, so this statement's snapshot includes their jobs.
-- (Two deletes of jobs: the listing indexes do not hold processing rows,
-- migration 043.)
WITH jobs AS (
  DELETE FROM spool.jobs WHERE organization_id = $1 AND status <> 'processing'
),
running AS (
  DELETE FROM spool.jobs WHERE organization_id = $1 AND status = 'processing'
),
dead_letters AS (
  DELETE FROM spool.dead_letter_queue WHERE organization_id = $1
),
keys AS (
  DELETE FROM spool.job_idempotency_keys WHERE organization_id = $1
),
minutes AS (
  DELETE FROM spool.queue_stats_minute WHERE organization_id = $1
),
hours AS (
  DELETE FROM spool.queue_stats_hour WHERE organization_id = $1
),
answers AS (
  DELETE FROM spool.job_key_answers WHERE organization_id = $1
)
DELETE FROM spool.job_history WHERE organization_id = $1;
