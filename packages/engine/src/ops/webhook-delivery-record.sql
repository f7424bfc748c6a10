-- Records one attempt's outcome ($2 success). A failure with $6 (retry
-- delay in ms) and attempts left stays pending until then; otherwise it is
-- final. The webhook's last status and consecutive failure count follow.
WITH updated AS (
  UPDATE spool.webhook_deliveries d
  SET status = CASE WHEN $2 THEN 'success'
                    WHEN $6::bigint IS NULL OR d.attempts >= d.max_attempts THEN 'failed'
                    ELSE 'pending' END,
      status_code = $3,
      response_body = left($4, 500),
      error = left($5, 2000),
      delivered_at = CASE WHEN $2 THEN now() ELSE d.delivered_at END,
      next_attempt_at = CASE WHEN $2 OR $6::bigint IS NULL THEN d.next_attempt_at ELSE now() + $6::bigint * interval '1 millisecond' END,
      updated_at = now()
  WHERE d.id = $1
  RETURNING d.webhook_id, d.status, d.attempts
),
hook AS (
  UPDATE spool.outgoing_webhooks w
  SET last_triggered_at = now(),
      last_status = CASE WHEN $2 THEN 'success' ELSE 'failed' END,
      failure_count = CASE WHEN $2 THEN 0 ELSE w.failure_count + 1 END
  FROM updated u
  WHERE w.id = u.webhook_id
)
SELECT status, attempts FROM updated;
