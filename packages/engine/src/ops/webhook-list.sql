-- An organization's outgoing webhooks, newest first ($2: only that one).
SELECT *
FROM spool.outgoing_webhooks
WHERE organization_id = $1 AND ($2::uuid IS NULL OR id = $2::uuid)
ORDER BY created_at DESC, id DESC
LIMIT 1000;
