-- Every key of an organization, revoked ones included, newest first
-- (serves GET /api-keys and the members view). Keys per organization are few.
SELECT id, organization_id, name, queues, role, rate_limit, is_active, created_at, last_used, expires_at
FROM spool.api_keys
WHERE organization_id = $1
ORDER BY created_at DESC, id DESC
LIMIT 1000;
