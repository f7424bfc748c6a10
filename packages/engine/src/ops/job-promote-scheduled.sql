-- Scheduled jobs whose time has come become pending, and their queues' claimers are woken.
WITH due AS (
  SELECT id
  FROM spool.jobs
  WHERE status = 'scheduled' AND scheduled_at <= now()
  ORDER BY scheduled_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
promoted AS (
  UPDATE spool.jobs j
  SET status = 'pending', updated_at = now()
  FROM due
  WHERE j.id = due.id
  RETURNING j.id, j.organization_id, j.queue_name
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status)
  SELECT organization_id, id, queue_name, 'promote', 'scheduled', 'pending' FROM promoted
)
SELECT count(*)::int AS promoted,
       (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
          FROM promoted HAVING count(*) > 0) IS NOT NULL AS notified
FROM promoted;
