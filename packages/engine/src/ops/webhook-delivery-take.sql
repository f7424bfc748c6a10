-- Takes one delivery of a webhook for a manual re-send: counts an attempt
-- and keeps the delivery service away from it for $4 seconds.
UPDATE spool.webhook_deliveries d
SET attempts = d.attempts + 1,
    status = 'pending',
    max_attempts = greatest(d.max_attempts, d.attempts + 1),
    next_attempt_at = now() + make_interval(secs => $4),
    updated_at = now()
WHERE d.organization_id = $1 AND d.webhook_id = $2 AND d.id = $3
RETURNING d.id, d.event, d.payload, d.attempts;
