-- Scheduler and maintenance (docs/scheduler.md).

-- serves: ops/job-retention-delete.sql (retention of finished and dead-lettered
-- jobs). Leading with (organization, queue, status) lets the sweep visit each
-- group with one index probe and delete only rows past that group's window,
-- so rows kept longer by a per-queue override are never rescanned.
CREATE INDEX jobs_finished_idx ON spool.jobs (organization_id, queue_name, status, completed_at)
  WHERE completed_at IS NOT NULL;

-- serves: ops/schedule-run-prune.sql (schedule run history past its window)
CREATE INDEX schedule_runs_started_idx ON spool.schedule_runs (started_at);
