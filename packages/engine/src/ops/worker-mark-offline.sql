-- Worker liveness: live workers whose last heartbeat is older than $1 ms
-- become offline (workers_live_heartbeat_idx). The caller releases their
-- processing jobs in the same transaction (job-release-worker.sql).
WITH stale AS (
  SELECT id
  FROM spool.workers
  WHERE status <> 'offline' AND last_heartbeat < now() - make_interval(secs => $1::float8 / 1000)
  ORDER BY last_heartbeat
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
UPDATE spool.workers w
SET status = 'offline', current_jobs = 0, updated_at = now()
FROM stale
WHERE w.id = stale.id
RETURNING w.id, w.organization_id;
