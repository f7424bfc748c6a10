-- Creates an API key for an existing organization (no row when it does not
-- exist, so callers answer 404 rather than tripping the foreign key). Only the
-- SHA-256 of the key is stored; the key itself is shown once by the caller.
INSERT INTO spool.api_keys (organization_id, name, key_hash, key_prefix, queues, rate_limit, expires_at, role)
SELECT o.id, $2, $3, $4, $5::text[], $6, $7, $8
FROM spool.organizations o
WHERE o.id = $1
RETURNING id, organization_id, name, queues, role, rate_limit, is_active, created_at, last_used, expires_at;
