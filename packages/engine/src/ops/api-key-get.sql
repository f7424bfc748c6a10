-- One key of an organization; another organization's key is simply absent.
SELECT id, organization_id, name, queues, role, rate_limit, is_active, created_at, last_used, expires_at
FROM spool.api_keys
WHERE organization_id = $1 AND id = $2;
