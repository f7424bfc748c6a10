-- Sets (text) or clears (null) settings.webhook_token; ingestion requires
-- the token whenever one is set.
UPDATE spool.organizations
SET settings   = CASE WHEN $2::text IS NULL THEN settings - 'webhook_token'
                      ELSE settings || jsonb_build_object('webhook_token', $2::text) END,
    updated_at = now()
WHERE id = $1
RETURNING *;
