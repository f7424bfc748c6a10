-- A deleted organization's jobs (their dead-letter rows go by cascade) and
-- job history. Run after organization-delete.sql in its transaction: that
-- delete waited for every insert holding the organization's KEY SHARE lock,
-- so this statement's snapshot includes their jobs.
WITH jobs AS (
  DELETE FROM spool.jobs WHERE organization_id = $1
)
DELETE FROM spool.job_history WHERE organization_id = $1;
