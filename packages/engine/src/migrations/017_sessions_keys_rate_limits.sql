-- Request rate limits shared by every replica: one row per budget (an API key,
-- or a client IP on the public routes), a fixed window that starts with the
-- first request after the previous one ended, like the in-process counters it
-- replaces. UNLOGGED: losing the counts in a crash only hands out one fresh
-- window, and every limited request writes here, so skipping WAL matters more.
-- No index besides the key, so that counting stays a HOT update.
-- serves: ops/rate-limit-hit.sql (by bucket), ops/rate-limit-prune.sql (scan)
CREATE UNLOGGED TABLE spool.rate_limit_counters (
  bucket     text PRIMARY KEY,
  window_end timestamptz NOT NULL,
  hits       integer NOT NULL
) WITH (fillfactor = 70);

-- A revoked key stays revoked (the dashboard shows an inactive key as
-- revoked, DELETE /api-keys/{id} is the contract's revoke): whatever path
-- tries to set is_active back to true is refused here too, not only by the
-- API's own check.
CREATE FUNCTION spool.api_keys_refuse_reactivation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'API key % was revoked and cannot be reactivated', OLD.id USING ERRCODE = 'check_violation';
END
$$;

CREATE TRIGGER api_keys_stay_revoked
  BEFORE UPDATE OF is_active ON spool.api_keys
  FOR EACH ROW WHEN (NOT OLD.is_active AND NEW.is_active)
  EXECUTE FUNCTION spool.api_keys_refuse_reactivation();
