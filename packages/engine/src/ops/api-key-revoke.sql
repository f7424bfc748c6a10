-- Revokes a key. Authentication reads the row on every request (no cache),
-- so the key and every token minted from it fail on their next request.
UPDATE spool.api_keys
SET is_active = false
WHERE organization_id = $1 AND id = $2
RETURNING id;
