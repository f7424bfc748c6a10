-- Takes or renews a named lease: it succeeds when nobody holds it, when the
-- holder's lease has run out, or when we already hold it. One autocommit
-- statement on a table row, so it works through PgBouncer in transaction
-- mode (a session advisory lock would not). Expiry uses the database clock.
-- When it fails, remaining_ms says when the current lease runs out.
WITH attempt AS (
  INSERT INTO spool.leader_leases AS l (name, holder, expires_at, acquired_at)
  VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000), now())
  ON CONFLICT (name) DO UPDATE
  SET holder = EXCLUDED.holder,
      expires_at = EXCLUDED.expires_at,
      acquired_at = CASE WHEN l.holder = EXCLUDED.holder THEN l.acquired_at ELSE now() END
  WHERE l.expires_at < now() OR l.holder = EXCLUDED.holder
  RETURNING l.holder
)
SELECT EXISTS (SELECT 1 FROM attempt) AS acquired,
       (SELECT (extract(epoch FROM c.expires_at - now()) * 1000)::float8 FROM spool.leader_leases c WHERE c.name = $1) AS remaining_ms,
       (SELECT c.holder FROM spool.leader_leases c WHERE c.name = $1) AS current_holder;
