-- What a key may do besides which queues it reaches (server authorization.ts):
-- admin (every key made before roles existed), producer, worker, read_only.
ALTER TABLE spool.api_keys
  ADD COLUMN role text NOT NULL DEFAULT 'admin'
  CHECK (role IN ('admin', 'producer', 'worker', 'read_only'));

-- A role change must reach every server's key cache like a queue change does.
DROP TRIGGER api_keys_auth_changed ON spool.api_keys;
CREATE TRIGGER api_keys_auth_changed
  AFTER UPDATE OF key_hash, organization_id, queues, rate_limit, is_active, expires_at, role OR DELETE ON spool.api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION spool.notify_auth_changed();
