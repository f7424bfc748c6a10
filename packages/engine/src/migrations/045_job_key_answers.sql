-- An enqueue with a job_key and an idempotency_key whose key policy answered
-- with the job that stands for the key (deduplicated, debounced, throttled,
-- replaced) creates no job, so no job holds its idempotency key. A repeat
-- of that request (a client retrying after a lost answer, the outbox relay
-- sending a row again after it was killed before marking it) would then be
-- decided by the key policy afresh: once the standing job had ended, or the
-- throttle window had passed, it would create a job, and one request would
-- have taken effect twice. So such an answer is kept here, and the
-- idempotency key names that job from then on, as a job's own
-- idempotency_key does (ops/job-key-resolve.sql), for as long as the job
-- exists: the statements that delete jobs delete their rows here too
-- (job-retention-delete.sql, dlq-purge.sql, organization-delete-jobs.sql).
-- Only keyed enqueues with an idempotency key write here; a plain enqueue
-- never reads it.
CREATE TABLE spool.job_key_answers (
  organization_id uuid NOT NULL,
  idempotency_key text NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
  job_id          uuid NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, idempotency_key)
);

-- serves: the deletes of jobs, which take their answers with them
CREATE INDEX job_key_answers_job_idx ON spool.job_key_answers (organization_id, job_id);
