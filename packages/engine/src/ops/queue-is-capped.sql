-- Whether claims of this queue must take the capped form of job-claim.sql: it
-- has a concurrency_limit, a rate_limit, a concurrency_key_limit or fair
-- share (queue_config.capped, migration 029).
SELECT 1
FROM spool.queue_config
WHERE organization_id = $1 AND queue_name = $2
  AND enabled AND capped;
