-- GET /schedules: newest first (schedules_org_idx).
SELECT * FROM spool.schedules
WHERE organization_id = $1
ORDER BY created_at DESC, id DESC
LIMIT $2 OFFSET $3;
