-- Job summaries of an organization (of the caller's queues: $7, LIKE patterns, NULL = all), optionally filtered by queue, status and
-- tag key. The ORDER BY placeholder is replaced at load time by one entry of the fixed
-- whitelist in job-read.ts, giving one named statement per ordering (so the
-- default ordering keeps using jobs_org_created_idx).
-- Processing jobs are not in the listing indexes (migration 043): they are
-- read in a branch of their own (jobs_processing_idx: few rows, bounded by the
-- workers' concurrency) and merged. Each branch is switched off by a one-time
-- filter when the status asked for cannot be in it.
SELECT id, queue_name, status, priority, retry_count, max_retries, created_at, scheduled_at, started_at, completed_at
FROM (
  (SELECT id, queue_name, status, priority, retry_count, max_retries, created_at, scheduled_at, started_at, completed_at, updated_at
   FROM spool.jobs
   WHERE organization_id = $1 AND status <> 'processing'
     AND $3::text IS DISTINCT FROM 'processing'
     AND ($2::text IS NULL OR queue_name = $2::text)
     AND ($3::text IS NULL OR status = $3::text)
     AND ($4::text IS NULL OR tags ? $4::text)
     AND ($7::text[] IS NULL OR queue_name LIKE ANY ($7::text[]))
   ORDER BY {{order}}
   LIMIT $5::bigint + $6::bigint)
  UNION ALL
  (SELECT id, queue_name, status, priority, retry_count, max_retries, created_at, scheduled_at, started_at, completed_at, updated_at
   FROM spool.jobs
   WHERE organization_id = $1 AND status = 'processing'
     AND ($3::text IS NULL OR $3::text = 'processing')
     AND ($2::text IS NULL OR queue_name = $2::text)
     AND ($4::text IS NULL OR tags ? $4::text)
     AND ($7::text[] IS NULL OR queue_name LIKE ANY ($7::text[]))
   ORDER BY {{order}}
   LIMIT $5::bigint + $6::bigint)
) j
ORDER BY {{order}}
LIMIT $5 OFFSET $6;
