-- GET /schedules: newest first (schedules_org_idx), of the caller's queues
-- ($4: LIKE patterns, NULL = all).
SELECT * FROM spool.schedules
WHERE organization_id = $1
  AND ($4::text[] IS NULL OR queue_name LIKE ANY ($4::text[]))
ORDER BY created_at DESC, id DESC
LIMIT $2 OFFSET $3;
