-- Dead-lettered jobs of an organization (optionally one queue; $5: the caller's
-- queues as LIKE patterns, NULL = all), newest first.
SELECT id, queue_name, status, priority, retry_count, max_retries, created_at, scheduled_at, started_at, completed_at,
       last_error, payload
FROM spool.jobs
WHERE organization_id = $1
  AND status = 'deadletter'
  AND ($2::text IS NULL OR queue_name = $2::text)
  AND ($5::text[] IS NULL OR queue_name LIKE ANY ($5::text[]))
ORDER BY completed_at DESC, id DESC
LIMIT $3 OFFSET $4;
