-- Partial update of an organization. A null parameter keeps the column;
-- flags set nullable columns explicitly. `settings` is replaced, except that
-- the webhook token is never set or dropped here (it has its own endpoints).
UPDATE spool.organizations
SET name          = coalesce($2, name),
    billing_email = CASE WHEN $3::boolean THEN $4 ELSE billing_email END,
    settings      = CASE WHEN $5::jsonb IS NULL THEN settings
                         ELSE ($5::jsonb - 'webhook_token')
                              || CASE WHEN settings ? 'webhook_token'
                                      THEN jsonb_build_object('webhook_token', settings -> 'webhook_token')
                                      ELSE '{}'::jsonb END
                    END,
    plan_tier     = coalesce($6, plan_tier),
    custom_limits = CASE WHEN $7::boolean THEN $8::jsonb ELSE custom_limits END,
    updated_at    = now()
WHERE id = $1
RETURNING *;
