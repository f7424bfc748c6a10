-- Revoked tokens are remembered only until they would have expired anyway
-- (plus $1 ms for clock skew between replicas): after that, the token's own
-- exp claim refuses it (revoked_tokens_expires_idx).
DELETE FROM spool.revoked_tokens
WHERE jti IN (
  SELECT jti FROM spool.revoked_tokens
  WHERE expires_at < now() - make_interval(secs => $1::float8 / 1000)
  ORDER BY expires_at
  LIMIT $2
)
RETURNING jti;
