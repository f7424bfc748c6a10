-- Stores (or replaces) one provider's sealed signing secret.
INSERT INTO spool.organization_webhook_secrets (organization_id, provider, ciphertext, iv, auth_tag, key_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (organization_id, provider) DO UPDATE
SET ciphertext = EXCLUDED.ciphertext, iv = EXCLUDED.iv, auth_tag = EXCLUDED.auth_tag, key_id = EXCLUDED.key_id, updated_at = now()
RETURNING provider, updated_at;
