-- Revokes JWTs (or sessions, by session id) until they would have expired
-- anyway. Repeating a revocation is harmless and only ever extends how long
-- it is kept: a session id revoked once as a refresh token's jti and once as
-- a session must outlive the session's last access token.
INSERT INTO spool.revoked_tokens AS r (jti, organization_id, expires_at)
SELECT jti, $2::uuid, max(to_timestamp(exp))
FROM unnest($1::uuid[], $3::bigint[]) AS t(jti, exp)
GROUP BY jti
ON CONFLICT (jti) DO UPDATE SET expires_at = greatest(r.expires_at, EXCLUDED.expires_at);
