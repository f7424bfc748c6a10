-- Ids of due schedules without locking them: after a batch failed, the firer
-- retries these one by one to find (and record) the one that fails.
SELECT id FROM spool.schedules
WHERE is_active AND next_run_at <= now()
ORDER BY next_run_at
LIMIT $1;
