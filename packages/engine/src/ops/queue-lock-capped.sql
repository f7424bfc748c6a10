-- Locks the config row of a queue that has a concurrency_limit, so capped
-- claims of that queue take turns: without the lock, two claimers could
-- each count the same free room and together start more than the limit.
-- Returns no row when the queue is uncapped or paused (nothing to claim).
SELECT concurrency_limit
FROM spool.queue_config
WHERE organization_id = $1 AND queue_name = $2
  AND enabled AND concurrency_limit IS NOT NULL
FOR UPDATE;
