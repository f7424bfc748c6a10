-- Steps down: deletes our lease (only if we still hold it) and tells the
-- other replicas, which try to take over at once instead of waiting out the TTL.
WITH released AS (
  DELETE FROM spool.leader_leases WHERE name = $1 AND holder = $2 RETURNING name
)
SELECT r.name FROM released r, LATERAL (SELECT pg_notify('spool_leader', r.name)) AS n;
