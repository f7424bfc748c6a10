-- Whether claims of this queue must go through queue-lock-capped.sql.
SELECT 1
FROM spool.queue_config
WHERE organization_id = $1 AND queue_name = $2
  AND enabled AND concurrency_limit IS NOT NULL;
