-- A manual trigger (works while paused): records a manual run for the job the
-- caller just created in the same transaction, and counts it on the schedule.
-- Manual runs are outside the (schedule, fire_time) uniqueness of cron ticks.
WITH run AS (
  INSERT INTO spool.schedule_runs (organization_id, schedule_id, fire_time, manual, job_id, status, started_at, completed_at)
  VALUES ($1, $2, now(), true, $3, 'completed', now(), now())
  RETURNING fire_time
)
UPDATE spool.schedules s
SET run_count = s.run_count + 1, last_run_at = now()
FROM run
WHERE s.organization_id = $1 AND s.id = $2
RETURNING run.fire_time AS triggered_at;
