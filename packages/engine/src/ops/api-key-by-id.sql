-- The key behind an access token: checked on every JWT request so that a
-- revoked key's tokens stop working at once.
SELECT k.id, k.organization_id, k.queues, k.role, k.rate_limit, k.is_active, k.expires_at, k.last_used, o.plan_tier, o.custom_limits
FROM spool.api_keys k
JOIN spool.organizations o ON o.id = k.organization_id
WHERE k.id = $1;
