-- Claims up to $1 due deliveries for one attempt each. SKIP LOCKED lets
-- every process run the delivery service; pushing next_attempt_at by $2
-- seconds hands the attempt to this caller only, and if it dies mid-attempt
-- the row becomes due again (the next attempt). Returns the target and
-- secret of each (a webhook's current url, or the job's completion_webhook).
WITH due AS (
  SELECT id
  FROM spool.webhook_deliveries
  WHERE status = 'pending' AND next_attempt_at <= now()
  ORDER BY next_attempt_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
claimed AS (
  UPDATE spool.webhook_deliveries d
  SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $2), updated_at = now()
  FROM due
  WHERE d.id = due.id
  RETURNING d.id, d.organization_id, d.webhook_id, d.job_id, d.url, d.event, d.payload, d.attempts, d.max_attempts
)
SELECT c.id, c.organization_id, c.webhook_id, c.job_id, c.event, c.payload, c.attempts, c.max_attempts,
       coalesce(w.url, c.url) AS target_url, w.secret, coalesce(w.enabled, true) AS enabled
FROM claimed c
LEFT JOIN spool.outgoing_webhooks w ON w.id = c.webhook_id;
