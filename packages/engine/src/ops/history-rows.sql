-- The ids of the job history rows after $1 (at most $2), with the snapshot
-- bounds that settle gaps (history-cursor.ts): where a reader starts, without
-- expanding rows of many jobs into their events (history-tail.sql does that).
SELECT coalesce((SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM spool.job_history WHERE id > $1 ORDER BY id LIMIT $2) r), '{}') AS ids,
       pg_snapshot_xmin(pg_current_snapshot())::text AS snapshot_xmin,
       pg_snapshot_xmax(pg_current_snapshot())::text AS snapshot_xmax;
