-- Decides what an enqueue with a job_key does (docs/jobs-api.md, "Job
-- keys"), for a batch with at most one item per (organization, queue, key).
-- The caller holds each key's transaction lock (job-enqueue.ts) from an
-- earlier statement, so this statement's snapshot includes every enqueue of
-- the key that went before, and none can run beside it.
--
-- The idempotency key is checked first: a job that has it stands (outcome
-- deduplicated), and so does the job an earlier keyed enqueue with that
-- idempotency key was answered with (spool.job_key_answers, migration 045:
-- an answer that created nothing is recorded below, so that a repeat of the
-- request is not decided afresh). Otherwise the standing job of the key is
--   dedupe, debounce, replace: the key's job that waits or runs, a job that
--     has not started yet first (jobs_job_key_active_idx);
--   throttle: the key's newest job created within window_secs, whatever
--     its status (jobs_job_key_created_idx).
-- Debounce and replace change a standing job only while it waits and has
-- never started: it is locked, and a claim that took it meanwhile leaves it
-- unchanged, which makes the outcome `created` instead (a new job; for
-- replace one that runs after the running job, `after_job_id`). A job that
-- has started is never changed: its attempts belong to what it ran.
--
-- Returns one row per item: `outcome` (created, deduplicated, debounced,
-- throttled, replaced), the standing `job_id` (null when a job is to be
-- created), `run_at` for a debounce job to be created, `after_job_id`.
-- A changed job gets one history row (event debounce or replace, with the
-- fields that changed, shaped as an edit's) and claimers or the promoter are woken as for an
-- edit, with its item's actor ($23). Queue defaults apply to a replacement
-- as to a new job (job-insert-many.sql): the queue's, else $21 / $22.
WITH input AS (
  SELECT *
  FROM unnest($1::int[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[], $8::text[],
              $9::text[], $10::int[], $11::int[], $12::int[], $13::timestamptz[], $14::timestamptz[], $15::text[],
              $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $23::text[])
       AS t(ord, organization_id, queue_name, job_key, mode, window_secs, max_wait_secs, idempotency_key,
            payload, priority, max_retries, timeout_seconds, scheduled_at, expires_at, tags,
            completion_webhook, concurrency_key, fairness_key, traceparent, tracestate, actor)
),
idem AS (
  SELECT i.ord, j.id, j.status
  FROM input i
  CROSS JOIN LATERAL (
    SELECT j.id, j.status
    FROM spool.job_idempotency_keys k
    JOIN spool.jobs j ON j.id = k.job_id AND j.organization_id = k.organization_id
    WHERE k.organization_id = i.organization_id AND k.idempotency_key = i.idempotency_key
    UNION ALL
    SELECT j.id, j.status
    FROM spool.job_key_answers a
    JOIN spool.jobs j ON j.id = a.job_id AND j.organization_id = a.organization_id
    WHERE a.organization_id = i.organization_id AND a.idempotency_key = i.idempotency_key
    LIMIT 1
  ) j
  WHERE i.idempotency_key IS NOT NULL
),
standing AS (
  SELECT i.ord, s.id, s.status, s.waiting
  FROM input i
  CROSS JOIN LATERAL (
    SELECT j.id, j.status, (j.status IN ('pending', 'scheduled') AND j.started_at IS NULL) AS waiting
    FROM spool.jobs j
    WHERE i.mode <> 'throttle'
      AND j.organization_id = i.organization_id AND j.queue_name = i.queue_name AND j.job_key = i.job_key
      AND j.status IN ('pending', 'scheduled', 'processing')
    ORDER BY (j.status IN ('pending', 'scheduled') AND j.started_at IS NULL) DESC, j.created_at DESC
    LIMIT 1
  ) s
  UNION ALL
  SELECT i.ord, s.id, s.status, false
  FROM input i
  CROSS JOIN LATERAL (
    SELECT j.id, j.status
    FROM spool.jobs j
    WHERE i.mode = 'throttle'
      AND j.organization_id = i.organization_id AND j.queue_name = i.queue_name AND j.job_key = i.job_key
      AND j.created_at > now() - make_interval(secs => i.window_secs)
    ORDER BY j.created_at DESC
    LIMIT 1
  ) s
),
decided AS (
  SELECT i.*, coalesce(d.id, s.id) AS standing_id, coalesce(d.status, s.status) AS standing_status, d.id IS NOT NULL AS by_idempotency,
         CASE WHEN d.id IS NOT NULL THEN 'deduplicated'
              WHEN s.id IS NULL THEN 'created'
              WHEN i.mode = 'dedupe' THEN 'deduplicated'
              WHEN i.mode = 'throttle' THEN 'throttled'
              WHEN NOT s.waiting THEN 'created'
              WHEN i.mode = 'debounce' THEN 'debounced'
              ELSE 'replaced' END AS planned,
         CASE WHEN d.id IS NULL AND i.mode = 'replace' AND s.id IS NOT NULL AND NOT s.waiting THEN s.id END AS running_id
  FROM input i
  LEFT JOIN idem d ON d.ord = i.ord
  LEFT JOIN standing s ON s.ord = i.ord
),
-- Locked and checked again at the newest version: a claim may have taken
-- the job since this statement's snapshot.
target AS (
  SELECT j.id, j.status, j.created_at, j.payload, j.priority, j.max_retries, j.tags, j.scheduled_at
  FROM spool.jobs j
  WHERE j.id IN (SELECT standing_id FROM decided WHERE planned IN ('debounced', 'replaced'))
    AND j.status IN ('pending', 'scheduled') AND j.started_at IS NULL
  FOR UPDATE
),
defaults AS (
  SELECT q.organization_id, q.queue_name, q.max_retries, q.default_timeout, q.default_timeout_set
  FROM spool.queue_config q
  WHERE (q.organization_id, q.queue_name) IN (SELECT organization_id, queue_name FROM decided WHERE planned = 'replaced')
),
edits AS (
  SELECT d.*, t.status AS old_status, t.scheduled_at AS old_scheduled_at, t.payload AS old_payload,
         t.priority AS old_priority, t.max_retries AS old_max_retries, t.tags AS old_tags,
         CASE WHEN d.planned = 'debounced'
              THEN least(now() + make_interval(secs => d.window_secs),
                         t.created_at + make_interval(secs => coalesce(d.max_wait_secs, d.window_secs + 31536000)))
              ELSE coalesce(d.scheduled_at, now()) END AS new_scheduled_at,
         q.max_retries AS queue_max_retries, q.default_timeout AS queue_timeout, q.default_timeout_set
  FROM decided d
  JOIN target t ON t.id = d.standing_id
  LEFT JOIN defaults q ON q.organization_id = d.organization_id AND q.queue_name = d.queue_name
),
changed AS (
  UPDATE spool.jobs j
  SET payload = p.payload::jsonb,
      scheduled_at = p.new_scheduled_at,
      status = CASE WHEN p.new_scheduled_at > now() THEN 'scheduled' ELSE 'pending' END,
      priority = CASE WHEN p.planned = 'replaced' THEN coalesce(p.priority, 0) ELSE j.priority END,
      max_retries = CASE WHEN p.planned = 'replaced' THEN coalesce(p.max_retries, p.queue_max_retries, $21::int) ELSE j.max_retries END,
      timeout_seconds = CASE WHEN p.planned = 'replaced' THEN coalesce(p.timeout_seconds, p.queue_timeout, $22::int) ELSE j.timeout_seconds END,
      timeout_enforced = CASE WHEN p.planned = 'replaced' THEN p.timeout_seconds IS NOT NULL OR coalesce(p.default_timeout_set, false) ELSE j.timeout_enforced END,
      expires_at = CASE WHEN p.planned = 'replaced' THEN p.expires_at ELSE j.expires_at END,
      tags = CASE WHEN p.planned = 'replaced' THEN p.tags::jsonb ELSE j.tags END,
      completion_webhook = CASE WHEN p.planned = 'replaced' THEN p.completion_webhook ELSE j.completion_webhook END,
      concurrency_key = CASE WHEN p.planned = 'replaced' THEN p.concurrency_key ELSE j.concurrency_key END,
      fairness_key = CASE WHEN p.planned = 'replaced' THEN p.fairness_key ELSE j.fairness_key END,
      traceparent = CASE WHEN p.planned = 'replaced' THEN p.traceparent ELSE j.traceparent END,
      tracestate = CASE WHEN p.planned = 'replaced' THEN p.tracestate ELSE j.tracestate END,
      job_key_mode = p.mode,
      updated_at = now()
  FROM edits p
  WHERE j.id = p.standing_id
  RETURNING j.id, j.organization_id, j.queue_name, j.status, j.scheduled_at, j.payload, j.priority, j.max_retries, j.tags
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, actor, details)
  SELECT c.organization_id, c.id, c.queue_name, CASE p.planned WHEN 'debounced' THEN 'debounce' ELSE 'replace' END,
         p.old_status, c.status, p.actor,
         jsonb_build_object(
           'fields', to_jsonb(array_remove(ARRAY[
             CASE WHEN c.payload IS DISTINCT FROM p.old_payload THEN 'payload' END,
             CASE WHEN c.priority <> p.old_priority THEN 'priority' END,
             CASE WHEN c.max_retries <> p.old_max_retries THEN 'max_retries' END,
             CASE WHEN c.tags IS DISTINCT FROM p.old_tags THEN 'tags' END,
             CASE WHEN c.scheduled_at IS DISTINCT FROM p.old_scheduled_at THEN 'scheduled_at' END], NULL)),
           'from', jsonb_strip_nulls(jsonb_build_object(
             'status', CASE WHEN c.status <> p.old_status THEN p.old_status END,
             'priority', CASE WHEN c.priority <> p.old_priority THEN p.old_priority END,
             'max_retries', CASE WHEN c.max_retries <> p.old_max_retries THEN p.old_max_retries END,
             'scheduled_at', p.old_scheduled_at)),
           'to', jsonb_strip_nulls(jsonb_build_object(
             'status', CASE WHEN c.status <> p.old_status THEN c.status END,
             'priority', CASE WHEN c.priority <> p.old_priority THEN c.priority END,
             'max_retries', CASE WHEN c.max_retries <> p.old_max_retries THEN c.max_retries END,
             'scheduled_at', c.scheduled_at)))
  FROM changed c
  JOIN edits p ON p.standing_id = c.id
),
-- The item's idempotency key now names the job it was answered with
-- (above); an item that creates a job gives the key to that job instead.
answered AS (
  INSERT INTO spool.job_key_answers (organization_id, idempotency_key, job_id)
  SELECT d.organization_id, d.idempotency_key, d.standing_id
  FROM decided d
  LEFT JOIN changed c ON c.id = d.standing_id
  WHERE d.idempotency_key IS NOT NULL AND NOT d.by_idempotency
    AND (d.planned IN ('deduplicated', 'throttled') OR c.id IS NOT NULL)
  ON CONFLICT (organization_id, idempotency_key) DO NOTHING
),
woken AS (
  SELECT pg_notify('spool_jobs', json_build_object(
           'q', coalesce(array_agg(DISTINCT c.organization_id::text || ':' || c.queue_name) FILTER (WHERE c.status = 'pending'), ARRAY[]::text[]),
           's', (extract(epoch FROM min(c.scheduled_at) FILTER (WHERE c.status = 'scheduled')) * 1000)::bigint)::text) AS sent
  FROM changed c
  HAVING count(*) > 0
)
SELECT d.ord,
       CASE WHEN d.planned IN ('debounced', 'replaced') AND c.id IS NULL THEN 'created' ELSE d.planned END AS outcome,
       CASE WHEN d.planned IN ('created', 'debounced', 'replaced') AND c.id IS NULL THEN NULL ELSE d.standing_id END AS job_id,
       coalesce(c.status, d.standing_status) AS status,
       CASE WHEN d.mode = 'debounce' AND c.id IS NULL AND d.planned <> 'deduplicated' AND d.planned <> 'throttled'
            THEN now() + make_interval(secs => d.window_secs) END AS run_at,
       CASE WHEN d.planned = 'replaced' AND c.id IS NULL THEN d.standing_id ELSE d.running_id END AS after_job_id,
       (SELECT count(*) FROM woken) AS woken
FROM decided d
LEFT JOIN changed c ON c.id = d.standing_id;
