-- Keyed jobs (docs/jobs-api.md, "Job keys"): a job may carry a job_key,
-- unique in meaning per (organization, queue), and the mode it was enqueued
-- with. An enqueue with a key first looks for the job that stands for it
-- (ops/job-key-resolve.sql) under a transaction lock per key, so concurrent
-- enqueues of one key take turns and none of them creates a second job.
--
-- Domains, not table CHECKs: a table CHECK runs on every UPDATE of
-- spool.jobs (claims, completions) whatever the UPDATE changed (migration
-- 014); a domain's runs only where the value is written.
CREATE DOMAIN spool.job_key AS text CHECK (char_length(VALUE) BETWEEN 1 AND 255);
CREATE DOMAIN spool.job_key_mode AS text CHECK (VALUE IN ('dedupe', 'debounce', 'throttle', 'replace'));

ALTER TABLE spool.jobs
  ADD COLUMN job_key spool.job_key,
  ADD COLUMN job_key_mode spool.job_key_mode;

-- The job that stands for a key while it waits or runs (dedupe, debounce,
-- replace). Only keyed jobs that have not ended have entries, so a key's
-- finished history is never read and jobs without a key pay nothing.
-- serves: ops/job-key-resolve.sql (standing, modes other than throttle)
CREATE INDEX jobs_job_key_active_idx ON spool.jobs (organization_id, queue_name, job_key)
  WHERE job_key IS NOT NULL AND status IN ('pending', 'scheduled', 'processing');

-- A key's jobs newest first, whatever their status: throttle reads the ones
-- created within its window.
-- serves: ops/job-key-resolve.sql (standing, throttle)
CREATE INDEX jobs_job_key_created_idx ON spool.jobs (organization_id, queue_name, job_key, created_at DESC)
  WHERE job_key IS NOT NULL;
