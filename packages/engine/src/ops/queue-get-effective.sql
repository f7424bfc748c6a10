-- GET /queues/{name}: the queue's config row, or, for a queue that has jobs
-- but no row, its effective defaults (the column defaults of
-- spool.queue_config) under an id derived from the organization and the
-- name, so it is the same on every read. Nothing is written: an implicit
-- queue does not become a config row that counts against max_queues.
SELECT qc.id, qc.organization_id, qc.queue_name::text AS queue_name, qc.max_retries, qc.default_timeout, qc.rate_limit,
       qc.enabled, qc.paused_at, qc.pause_reason, qc.backoff_base_ms, qc.backoff_max_ms, qc.backoff_jitter_ms,
       qc.concurrency_limit, qc.rate_limit_burst, qc.concurrency_key_limit, qc.fairness, qc.fairness_weights, qc.settings, qc.created_at, qc.updated_at, qc.default_timeout_set, true AS configured
FROM spool.queue_config qc
WHERE qc.organization_id = $1 AND qc.queue_name = $2
UNION ALL
SELECT md5('queue_config/' || $1::text || '/' || $2::text)::uuid, $1::uuid, $2::text, 3, 300, NULL::int,
       true, NULL::timestamptz, NULL::text, 1000, 60000, 500,
       NULL::int, NULL::int, NULL::int, NULL::text, NULL::jsonb, '{}'::jsonb, now(), now(), false, false
WHERE NOT EXISTS (SELECT 1 FROM spool.queue_config WHERE organization_id = $1 AND queue_name = $2)
  -- one probe of jobs_org_queue_status_idx, and of jobs_processing_idx for
  -- the processing jobs it does not hold (migration 043)
  AND (EXISTS (SELECT 1 FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 AND status <> 'processing')
       OR EXISTS (SELECT 1 FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 AND status = 'processing'));
