-- Schedule run history older than $1 days goes (schedule_runs_started_idx).
-- Old cron ticks need no run row to stay exactly-once: next_run_at has long
-- moved past them.
DELETE FROM spool.schedule_runs
WHERE id IN (
  SELECT id FROM spool.schedule_runs
  WHERE started_at < now() - make_interval(secs => 86400 * $1::float8)
  ORDER BY started_at
  LIMIT $2
)
RETURNING id;
