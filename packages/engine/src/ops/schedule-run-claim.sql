-- Claims cron ticks: one run row per (schedule, fire_time). A conflict means
-- the tick was already fired (by another replica, or before a restart), so
-- only the returned ticks get a job. This unique row, written in the same
-- transaction as the job, is what makes firing exactly once.
INSERT INTO spool.schedule_runs (organization_id, schedule_id, fire_time, manual, status, error_message, started_at, completed_at)
SELECT t.organization_id, t.schedule_id, t.fire_time, false, t.status, t.error_message, clock_timestamp(),
       CASE WHEN t.status = 'failed' THEN clock_timestamp() END
FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[])
     AS t(organization_id, schedule_id, fire_time, status, error_message)
ON CONFLICT (schedule_id, fire_time) WHERE NOT manual DO NOTHING
RETURNING id, schedule_id, fire_time;
