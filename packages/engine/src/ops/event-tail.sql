-- Reads the event log after $1 (at most $3 rows) plus the re-read gap ids $2
-- (see history-cursor.ts), with the snapshot bounds that settle gaps. Always
-- returns at least one row: with no events the event columns are null.
SELECT e.id, e.organization_id, e.type, e.data, e.created_at,
       pg_snapshot_xmin(snap.s)::text AS snapshot_xmin, pg_snapshot_xmax(snap.s)::text AS snapshot_xmax
FROM (SELECT pg_current_snapshot() AS s) snap
LEFT JOIN LATERAL (
  (SELECT * FROM spool.events WHERE id > $1 ORDER BY id LIMIT $3)
  UNION ALL
  (SELECT * FROM spool.events WHERE id = ANY($2::bigint[]) AND id <= $1)
) e ON true
ORDER BY e.id;
