-- Which providers have a secret (never the secret itself).
SELECT provider, updated_at
FROM spool.organization_webhook_secrets
WHERE organization_id = $1;
