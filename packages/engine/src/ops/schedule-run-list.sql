-- GET /schedules/{id}/history: newest first (schedule_runs_schedule_idx).
SELECT * FROM spool.schedule_runs
WHERE organization_id = $1 AND schedule_id = $2
ORDER BY started_at DESC, fire_time DESC
LIMIT $3;
