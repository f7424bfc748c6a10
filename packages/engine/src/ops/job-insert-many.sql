-- Inserts a batch of jobs (any organizations, any queues) in one statement.
-- Idempotency: (organization_id, idempotency_key) resolves to one job,
-- through spool.job_idempotency_keys (migration 046: a partitioned
-- spool.jobs cannot hold the unique index). ON CONFLICT DO UPDATE (a no-op
-- write) makes a concurrent duplicate wait for the first insert and then
-- return its key row, so there is no race window; xmax = 0 tells a fresh key
-- from a hit, and only a fresh key inserts its job. The standing job's
-- status is read by spool.job_status_latest, which (volatile) sees a job
-- committed after this statement's snapshot, as the duplicate that waited
-- for it does. Callers dedupe keys within a batch.
-- One pg_notify for the whole statement (never per row): docs/design.md §8.
-- The batch's organizations are locked once (FOR KEY SHARE) instead of a
-- foreign-key check per row (migration 013); a missing one fails the whole
-- statement with foreign_key_violation, as the key did.
-- A job without its own max_retries / timeout_seconds takes its queue's
-- configured defaults, else $14 / $15: one probe per distinct queue of the
-- batch, and none when every job brings its own. The server enforces a
-- timeout that was chosen (the job's own or the queue's default_timeout_set),
-- not the built-in $15 (migration 026). A job_key ($20, with its mode $21)
-- is decided before, by job-key-resolve.sql (job-enqueue.ts): this only keeps it.
WITH input AS (
  SELECT *
  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int[], $6::int[], $7::int[],
              $8::timestamptz[], $9::timestamptz[], $10::text[], $11::text[], $12::uuid[], $13::text[],
              $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[])
       AS t(id, organization_id, queue_name, payload, priority, max_retries, timeout_seconds,
            scheduled_at, expires_at, idempotency_key, tags, parent_job_id, completion_webhook,
            traceparent, tracestate, concurrency_key, fairness_key, job_key, job_key_mode)
),
defaults AS (
  SELECT q.organization_id, q.queue_name, q.max_retries, q.default_timeout, q.default_timeout_set
  FROM spool.queue_config q
  WHERE (q.organization_id, q.queue_name) IN (
    SELECT DISTINCT organization_id, queue_name FROM input WHERE max_retries IS NULL OR timeout_seconds IS NULL)
),
owners AS MATERIALIZED (
  SELECT spool.lock_organizations(ARRAY(SELECT DISTINCT organization_id FROM input)) AS locked
),
keys AS (
  INSERT INTO spool.job_idempotency_keys AS k (organization_id, idempotency_key, job_id)
  SELECT i.organization_id, i.idempotency_key, i.id
  FROM input i
  WHERE i.idempotency_key IS NOT NULL AND (SELECT locked FROM owners)
  ON CONFLICT (organization_id, idempotency_key) DO UPDATE SET job_id = k.job_id
  RETURNING k.organization_id, k.idempotency_key, k.job_id, (k.xmax = 0) AS created
),
inserted AS (
  INSERT INTO spool.jobs AS j (id, organization_id, queue_name, status, payload, priority, max_retries,
                               timeout_seconds, scheduled_at, expires_at, idempotency_key, tags,
                               parent_job_id, completion_webhook, traceparent, tracestate, concurrency_key, fairness_key,
                               timeout_enforced, job_key, job_key_mode)
  SELECT i.id, i.organization_id, i.queue_name,
         CASE WHEN i.scheduled_at > now() THEN 'scheduled' ELSE 'pending' END,
         i.payload::jsonb, i.priority,
         coalesce(i.max_retries, d.max_retries, $14::int), coalesce(i.timeout_seconds, d.default_timeout, $15::int),
         i.scheduled_at, i.expires_at, i.idempotency_key, i.tags::jsonb, i.parent_job_id, i.completion_webhook,
         i.traceparent, i.tracestate, i.concurrency_key, i.fairness_key,
         i.timeout_seconds IS NOT NULL OR coalesce(d.default_timeout_set, false),
         i.job_key, i.job_key_mode
  FROM input i
  LEFT JOIN defaults d ON d.organization_id = i.organization_id AND d.queue_name = i.queue_name
  WHERE (SELECT locked FROM owners)
    AND (i.idempotency_key IS NULL
         OR EXISTS (SELECT 1 FROM keys k WHERE k.created AND k.job_id = i.id))
  RETURNING j.id, j.organization_id, j.queue_name, j.status, j.idempotency_key, j.scheduled_at, true AS created
),
standing AS (
  SELECT k.job_id AS id, k.organization_id, k.idempotency_key, spool.job_status_latest(k.job_id) AS status
  FROM keys k
  WHERE NOT k.created
),
-- One history row per (organization, queue, status) of the statement, of
-- at most 1024 jobs (migration 021), not one per job.
history AS (
  INSERT INTO spool.job_history (organization_id, queue_name, event, from_status, to_status, job_ids)
  SELECT organization_id, queue_name, 'create', NULL, status, array_agg(id)
  FROM (SELECT organization_id, queue_name, status, id,
               (row_number() OVER (PARTITION BY organization_id, queue_name, status) - 1) / 1024 AS chunk
        FROM inserted WHERE created) c
  GROUP BY organization_id, queue_name, status, chunk
)
SELECT i.id, i.organization_id, i.idempotency_key, i.status, i.created,
       (SELECT pg_notify('spool_jobs', json_build_object(
                 'q', CASE WHEN count(DISTINCT (organization_id, queue_name)) > 50 THEN NULL
                           ELSE array_agg(DISTINCT organization_id::text || ':' || queue_name) FILTER (WHERE status = 'pending') END,
                 'all', count(DISTINCT (organization_id, queue_name)) > 50,
                 's', (extract(epoch FROM min(scheduled_at) FILTER (WHERE status = 'scheduled')) * 1000)::bigint)::text)
          FROM inserted WHERE created HAVING count(*) > 0) IS NOT NULL AS notified
FROM inserted i
UNION ALL
SELECT s.id, s.organization_id, s.idempotency_key, s.status, false, false
FROM standing s;
