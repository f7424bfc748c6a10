-- Per-organization signing secrets for incoming GitHub and Stripe webhooks
-- (they used to be server-wide, so a signed delivery was accepted at any
-- organization's URL). Only AES-256-GCM ciphertext is stored: the key
-- (SPOOL_SECRETS_KEY, or the development key file) is never in the
-- database, so a dump alone does not reveal a secret. `key_id` is a
-- fingerprint of the key that sealed the row, to tell "wrong key" from
-- "tampered row" in the log.
CREATE TABLE spool.organization_webhook_secrets (
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  provider        text NOT NULL CHECK (provider IN ('github', 'stripe')),
  ciphertext      bytea NOT NULL,
  iv              bytea NOT NULL,
  auth_tag        bytea NOT NULL,
  key_id          text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, provider)
);

-- Deliveries already turned into jobs, remembered so that a replayed
-- request (same GitHub delivery id or body, same Stripe event id) is
-- answered 200 without enqueueing again. Pruned after a day or more by the
-- leader's IncomingDeliveryPruner.
CREATE TABLE spool.incoming_webhook_deliveries (
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  provider        text NOT NULL,
  delivery_key    text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, provider, delivery_key)
);
-- serves: ops/incoming-delivery-prune.sql
CREATE INDEX incoming_webhook_deliveries_created_idx ON spool.incoming_webhook_deliveries (created_at);
