-- Whether claims of this queue must go through queue-lock-capped.sql: it
-- has a concurrency_limit, a rate_limit or a concurrency_key_limit.
SELECT 1
FROM spool.queue_config
WHERE organization_id = $1 AND queue_name = $2
  AND enabled AND (concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL OR concurrency_key_limit IS NOT NULL);
