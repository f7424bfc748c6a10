-- Links claimed runs to the jobs created for them in the same transaction,
-- and writes schedule.triggered for each (one NOTIFY on spool_events).
WITH attached AS (
  UPDATE spool.schedule_runs r
  SET job_id = t.job_id, status = 'completed', completed_at = clock_timestamp()
  FROM unnest($1::uuid[], $2::uuid[]) AS t(run_id, job_id)
  WHERE r.id = t.run_id
  RETURNING r.organization_id, r.schedule_id, r.job_id, r.fire_time
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT a.organization_id, 'schedule.triggered',
         jsonb_build_object('schedule_id', a.schedule_id, 'job_id', a.job_id, 'queue_name', s.queue_name, 'manual', false)
  FROM attached a
  JOIN spool.schedules s ON s.id = a.schedule_id
  ORDER BY a.fire_time, a.job_id
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT (SELECT count(*) FROM attached)::int AS attached, (SELECT count(*) FROM notified)::int AS notified;
