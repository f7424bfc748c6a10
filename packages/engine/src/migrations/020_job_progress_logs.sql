-- Progress and log lines a worker reports for the job it holds (POST
-- /jobs/{id}/progress and /jobs/{id}/logs). Kept beside the job,
-- not on it: a progress update every second would otherwise rewrite the wide
-- spool.jobs row and add dead tuples to the hot table.
--
-- No foreign key to spool.jobs: a cascade would add a trigger to every job
-- delete (retention deletes in batches of thousands, most jobs with no
-- progress at all). The statements that delete jobs delete these rows in the
-- same statement instead (job-retention-delete.sql, dlq-purge.sql), as they
-- do the job history. A deleted organization's go by the cascade of their
-- key to spool.organizations: unlike the jobs' (migration 013) its lookup
-- costs an insert per worker report, not per enqueued job, and it keeps an
-- append racing the organization's delete from leaving rows behind.
CREATE TABLE spool.job_progress (
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  job_id          uuid NOT NULL,
  percent         double precision CHECK (percent BETWEEN 0 AND 100),
  message         text CHECK (char_length(message) <= 1000),
  metadata        jsonb,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  -- serves: the progress of one job (job-progress-set.sql, job-progress-get.sql) and its delete with the job
  PRIMARY KEY (organization_id, job_id)
);

CREATE TABLE spool.job_logs (
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  job_id          uuid NOT NULL,
  -- one sequence for every job: a job's lines in the order they were written
  seq             bigint GENERATED ALWAYS AS IDENTITY,
  at              timestamptz NOT NULL DEFAULT now(),
  line            text NOT NULL CHECK (char_length(line) <= 4096),
  -- serves: one job's lines in order (job-log-list.sql), the per-job bound
  -- (job-log-append.sql reads the job's lines newest first) and the delete with the job
  PRIMARY KEY (organization_id, job_id, seq)
);

-- The two realtime events these write to the event log (ops/event.ts).
ALTER TABLE spool.events DROP CONSTRAINT events_type_check;
ALTER TABLE spool.events ADD CONSTRAINT events_type_check CHECK (type IN (
  'queue.paused', 'queue.resumed', 'worker.registered', 'worker.deregistered', 'schedule.triggered', 'job.progress', 'job.log'
));
