-- Revokes JWTs by jti until they would have expired anyway. Repeating a
-- revocation is harmless.
INSERT INTO spool.revoked_tokens (jti, organization_id, expires_at)
SELECT jti, $2::uuid, to_timestamp(exp)
FROM unnest($1::uuid[], $3::bigint[]) AS t(jti, exp)
ON CONFLICT (jti) DO NOTHING;
