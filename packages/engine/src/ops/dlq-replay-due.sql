-- The DlqReplayer's round (services/dlq-replayer.ts): running replays of
-- every organization whose next batch is due, most overdue first (so that
-- no organization's replay starves another's), at most $1, and how long
-- until the earliest one that is not due yet (NULL: none is running).
-- Read without locks: the batch takes the replay row itself.
SELECT r.organization_id, r.id, r.batch_size, NULL::double precision AS wait_ms
FROM (
  SELECT organization_id, id, batch_size, next_batch_at
  FROM spool.dlq_replays
  WHERE status = 'running' AND next_batch_at <= now()
  ORDER BY next_batch_at
  LIMIT $1
) AS r
UNION ALL
SELECT NULL, NULL, NULL, extract(epoch FROM min(next_batch_at) - now()) * 1000
FROM spool.dlq_replays
WHERE status = 'running' AND next_batch_at > now();
