-- A webhook's deliveries, newest first ($3: only that one).
SELECT id, webhook_id, event, payload, status, status_code, response_body, error, attempts, created_at, delivered_at, next_attempt_at
FROM spool.webhook_deliveries
WHERE organization_id = $1 AND webhook_id = $2 AND ($3::uuid IS NULL OR id = $3::uuid)
ORDER BY created_at DESC, id DESC
LIMIT $4;
