-- Events older than $1 days go, oldest first, at most $2 per statement
-- (events_created_idx). A realtime client or the webhook dispatcher that is
-- further behind than the window misses them, as it would miss pruned jobs.
DELETE FROM spool.events
WHERE id IN (
  SELECT id FROM spool.events
  WHERE created_at < now() - make_interval(secs => 86400 * $1::float8)
  ORDER BY created_at
  LIMIT $2
)
RETURNING id;
