-- Finished replays (completed, cancelled, failed) older than $1 days, at
-- most $2 per statement, every organization. Their lists are empty already.
DELETE FROM spool.dlq_replays r
USING (
  SELECT organization_id, id FROM spool.dlq_replays
  WHERE status <> 'running' AND finished_at < now() - make_interval(days => $1::integer)
  ORDER BY finished_at
  LIMIT $2
) AS old
WHERE r.organization_id = old.organization_id AND r.id = old.id;
