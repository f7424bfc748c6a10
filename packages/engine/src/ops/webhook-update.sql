-- Partial update: a null parameter keeps the current value; $7 = true
-- clears the secret.
UPDATE spool.outgoing_webhooks
SET name = coalesce($3, name),
    url = coalesce($4, url),
    events = coalesce($5::text[], events),
    secret = CASE WHEN $7 THEN NULL ELSE coalesce($6, secret) END,
    enabled = coalesce($8, enabled),
    failure_count = CASE WHEN $8 IS TRUE AND NOT enabled THEN 0 ELSE failure_count END,
    updated_at = now()
WHERE organization_id = $1 AND id = $2
RETURNING *;
