-- Registers an outgoing webhook. The secret is stored for signing and is
-- never returned by any read.
INSERT INTO spool.outgoing_webhooks (organization_id, name, url, events, secret, enabled)
VALUES ($1, $2, $3, $4::text[], $5, $6)
RETURNING *;
