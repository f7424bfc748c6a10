-- A manual trigger (works while paused): records a manual run for the job the
-- caller just created in the same transaction, counts it on the schedule, and
-- writes schedule.triggered (one NOTIFY on spool_events).
-- Manual runs are outside the (schedule, fire_time) uniqueness of cron ticks.
WITH run AS (
  INSERT INTO spool.schedule_runs (organization_id, schedule_id, fire_time, manual, job_id, status, started_at, completed_at)
  VALUES ($1, $2, now(), true, $3, 'completed', now(), now())
  RETURNING fire_time
),
counted AS (
  UPDATE spool.schedules s
  SET run_count = s.run_count + 1, last_run_at = now()
  FROM run
  WHERE s.organization_id = $1 AND s.id = $2
  RETURNING run.fire_time AS triggered_at, s.organization_id, s.id, s.queue_name
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT c.organization_id, 'schedule.triggered',
         jsonb_build_object('schedule_id', c.id, 'job_id', $3::uuid, 'queue_name', c.queue_name, 'manual', true)
  FROM counted c
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT c.triggered_at FROM counted c LEFT JOIN notified ON true;
