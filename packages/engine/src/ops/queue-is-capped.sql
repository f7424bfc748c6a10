-- Whether claims of this queue must go through queue-lock-capped.sql: it
-- has a concurrency_limit, a rate_limit, a concurrency_key_limit or fair
-- share (queue_config.capped, migration 029).
SELECT 1
FROM spool.queue_config
WHERE organization_id = $1 AND queue_name = $2
  AND enabled AND capped;
