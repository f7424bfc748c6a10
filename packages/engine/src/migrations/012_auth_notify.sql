-- Servers cache recently presented API keys for a moment (server
-- http/api-key-cache.ts) instead of querying them on every request. These
-- triggers tell every server, through NOTIFY spool_auth, that a key or its
-- organization changed in a way that can refuse or limit a request: revoked,
-- expiry, queues, rate limit, plan, limits, deleted. Each server then forgets
-- its whole cache. Statement-level, so a bulk change sends one notification;
-- `last_used` touches and the daily job counter do not fire them.
CREATE FUNCTION spool.notify_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('spool_auth', '');
  RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_auth_changed
  AFTER UPDATE OF key_hash, organization_id, queues, rate_limit, is_active, expires_at OR DELETE ON spool.api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION spool.notify_auth_changed();

CREATE TRIGGER organizations_auth_changed
  AFTER UPDATE OF plan_tier, custom_limits OR DELETE ON spool.organizations
  FOR EACH STATEMENT EXECUTE FUNCTION spool.notify_auth_changed();
