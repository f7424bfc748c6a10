-- Worker liveness: live workers whose last heartbeat is older than $1 ms
-- become offline (workers_live_heartbeat_idx). The caller releases their
-- processing jobs in the same transaction (job-release-worker.sql). Each
-- counts as deregistered: worker.deregistered with reason
-- "missed_heartbeats", in the same statement (one NOTIFY on spool_events).
WITH stale AS (
  SELECT id
  FROM spool.workers
  WHERE status <> 'offline' AND last_heartbeat < now() - make_interval(secs => $1::float8 / 1000)
  ORDER BY last_heartbeat
  LIMIT $2
  FOR UPDATE SKIP LOCKED
),
marked AS (
  UPDATE spool.workers w
  SET status = 'offline', current_jobs = 0, updated_at = now()
  FROM stale
  WHERE w.id = stale.id
  RETURNING w.id, w.organization_id, w.queue_name, w.hostname
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT m.organization_id, 'worker.deregistered',
         jsonb_build_object('worker_id', m.id, 'queue_name', m.queue_name, 'hostname', m.hostname, 'reason', 'missed_heartbeats')
  FROM marked m
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT m.id, m.organization_id FROM marked m LEFT JOIN notified ON true;
