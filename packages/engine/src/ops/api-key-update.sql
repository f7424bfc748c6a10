-- Partial update of a key: a null parameter keeps the column, except
-- rate_limit, which a flag ($5) sets (to a value or to null). A revoked
-- (inactive) key is never made active again: the update then changes nothing
-- and the key comes back with refused = true, so the caller can tell a
-- refusal (409) from a key that is not the organization's (no row). The
-- WHERE is rechecked on the newest row version, so a revoke that commits
-- while this waits for the row still wins.
WITH updated AS (
  UPDATE spool.api_keys
  SET name       = coalesce($3, name),
      queues     = coalesce($4::text[], queues),
      rate_limit = CASE WHEN $5::boolean THEN $6::integer ELSE rate_limit END,
      is_active  = coalesce($7::boolean, is_active),
      role       = coalesce($8::text, role)
  WHERE organization_id = $1 AND id = $2 AND (is_active OR $7::boolean IS NOT TRUE)
  RETURNING id, organization_id, name, queues, role, rate_limit, is_active, created_at, last_used, expires_at
)
SELECT false AS refused, * FROM updated
UNION ALL
SELECT true AS refused, id, organization_id, name, queues, role, rate_limit, is_active, created_at, last_used, expires_at
FROM spool.api_keys
WHERE organization_id = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM updated);
