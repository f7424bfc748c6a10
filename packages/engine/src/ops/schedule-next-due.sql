-- How long the firer may sleep: ms until the earliest active next_run_at
-- (schedules_due_idx), measured on the database clock.
SELECT (extract(epoch FROM min(next_run_at) - now()) * 1000)::float8 AS due_in_ms
FROM spool.schedules
WHERE is_active AND next_run_at IS NOT NULL;
