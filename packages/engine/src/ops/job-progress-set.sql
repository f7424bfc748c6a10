-- Records the progress of a job for the worker that holds it, fenced like
-- job-heartbeat.sql (spool.job_fence, migration 042: the owning worker, only
-- the presented lease when one is, before the attempt's deadline). A field
-- not sent ($8, $9, $10 false) keeps its value; null clears it. The job
-- row is only read, never written. A job.progress event goes to the event
-- log in the same statement (one NOTIFY on spool_events).
-- Returns nothing when the caller lost the job.
WITH owner AS (
  SELECT j.organization_id, j.id, j.queue_name
  FROM spool.jobs j
  WHERE j.organization_id = $1
    AND j.phase = 'live' -- a finished job holds no lease; the planner prunes jobs_done
    AND j.id = $2
    AND spool.job_fence(j, $3::text, $4::uuid) = 'held'
),
saved AS (
  INSERT INTO spool.job_progress AS p (organization_id, job_id, percent, message, metadata, updated_at)
  SELECT o.organization_id, o.id, $5::float8, $6::text, $7::jsonb, now()
  FROM owner o
  ON CONFLICT (organization_id, job_id) DO UPDATE
  SET percent = CASE WHEN $8::boolean THEN EXCLUDED.percent ELSE p.percent END,
      message = CASE WHEN $9::boolean THEN EXCLUDED.message ELSE p.message END,
      metadata = CASE WHEN $10::boolean THEN EXCLUDED.metadata ELSE p.metadata END,
      updated_at = now()
  RETURNING p.*
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT s.organization_id, 'job.progress', jsonb_build_object(
    'job_id', s.job_id, 'queue_name', o.queue_name, 'percent', s.percent, 'message', s.message, 'metadata', s.metadata)
  FROM saved s CROSS JOIN owner o
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT s.job_id, o.queue_name, s.percent, s.message, s.metadata, s.updated_at
FROM saved s CROSS JOIN owner o LEFT JOIN notified ON true;
