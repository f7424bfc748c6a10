-- Records the server's plan table (packages/server/src/plans.ts) for
-- spool.enqueue() (migration 039), which enforces the limits inside the
-- caller's transaction. Written at every start; rows that did not change
-- are not rewritten.
INSERT INTO spool.plan_limits (tier, limits)
SELECT * FROM unnest($1::text[], $2::jsonb[])
ON CONFLICT (tier) DO UPDATE SET limits = EXCLUDED.limits
WHERE spool.plan_limits.limits IS DISTINCT FROM EXCLUDED.limits;
