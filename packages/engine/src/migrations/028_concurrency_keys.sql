-- Concurrency keys: a job may carry a concurrency_key, and a queue's
-- concurrency_key_limit caps the processing jobs per key (docs/jobs-api.md,
-- "Concurrency keys"). Claims of such a queue take the capped path, which
-- locks the config row, so the count per key is exact across replicas.
ALTER TABLE spool.jobs
  ADD COLUMN concurrency_key text CHECK (char_length(concurrency_key) BETWEEN 1 AND 255);
ALTER TABLE spool.queue_config
  ADD COLUMN concurrency_key_limit integer CHECK (concurrency_key_limit BETWEEN 1 AND 100000);

-- The processing jobs per key of a queue, counted by the capped claim;
-- only keyed jobs have entries, so unkeyed queues pay nothing.
-- serves: ops/job-claim.sql (running)
CREATE INDEX jobs_concurrency_key_idx ON spool.jobs (organization_id, queue_name, concurrency_key)
  WHERE status = 'processing' AND concurrency_key IS NOT NULL;

-- The claim scan passes over jobs of a full key, so it reads their key.
CREATE OR REPLACE VIEW spool.claimable_jobs AS
SELECT id, organization_id, queue_name, priority, created_at, concurrency_key
FROM spool.jobs
WHERE status = 'pending' AND dependencies_met IS NOT FALSE AND NOT in_backoff
  AND (scheduled_at IS NULL OR scheduled_at <= now())
  AND (expires_at IS NULL OR expires_at > now());
