-- The firer's batch: active schedules whose next tick has come, locked so
-- that concurrent firers (or an API update) never work on the same schedule
-- at once; SKIP LOCKED lets another firer take the rest. db_now is the one
-- clock every replica agrees on. $2 narrows to one schedule (retry alone).
SELECT id, organization_id, cron_expression, timezone, missed_policy, next_run_at, queue_name,
       payload_template, priority, max_retries, max_retries_set, timeout_seconds, timeout_set, tags, now() AS db_now
FROM spool.schedules
WHERE is_active AND next_run_at <= now() AND ($2::uuid IS NULL OR id = $2)
ORDER BY next_run_at
LIMIT $1
FOR UPDATE SKIP LOCKED;
