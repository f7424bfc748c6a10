-- Removes one provider's signing secret; ingestion from it is then refused.
DELETE FROM spool.organization_webhook_secrets
WHERE organization_id = $1 AND provider = $2
RETURNING provider;
