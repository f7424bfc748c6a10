-- Partial update of a key: a null parameter keeps the column, except
-- rate_limit, which a flag ($5) sets (to a value or to null).
UPDATE spool.api_keys
SET name       = coalesce($3, name),
    queues     = coalesce($4::text[], queues),
    rate_limit = CASE WHEN $5::boolean THEN $6::integer ELSE rate_limit END,
    is_active  = coalesce($7::boolean, is_active),
    role       = coalesce($8::text, role)
WHERE organization_id = $1 AND id = $2
RETURNING id, organization_id, name, queues, role, rate_limit, is_active, created_at, last_used, expires_at;
