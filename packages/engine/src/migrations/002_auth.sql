-- Server-wide settings shared by every replica (e.g. the generated JWT
-- secret, so that tokens minted by one replica verify on another).
CREATE TABLE spool.server_settings (
  name       text PRIMARY KEY,
  value      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Access/refresh tokens revoked by logout before they expire.
CREATE TABLE spool.revoked_tokens (
  jti             uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  expires_at      timestamptz NOT NULL,
  revoked_at      timestamptz NOT NULL DEFAULT now()
);
-- serves: pruning revoked tokens once they would have expired anyway
CREATE INDEX revoked_tokens_expires_idx ON spool.revoked_tokens (expires_at);
