-- Resolves a presented API key (by the SHA-256 of the whole key) to its key
-- and organization. One indexed lookup; servers keep its answer briefly
-- (server http/api-key-cache.ts) and drop it when migration 012's triggers
-- announce a change, so a revoked key fails at once on every replica.
SELECT k.id, k.organization_id, k.queues, k.role, k.rate_limit, k.is_active, k.expires_at, k.last_used,
       o.plan_tier, o.custom_limits
FROM spool.api_keys k
JOIN spool.organizations o ON o.id = k.organization_id
WHERE k.key_hash = $1;
