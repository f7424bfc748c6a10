-- Configured queues of an organization, by name (of the caller's queues: $3,
-- LIKE patterns, NULL = all).
SELECT * FROM spool.queue_config
WHERE organization_id = $1 AND ($3::text[] IS NULL OR queue_name LIKE ANY ($3::text[]))
ORDER BY queue_name LIMIT $2;
