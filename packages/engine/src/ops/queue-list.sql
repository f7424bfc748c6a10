-- Configured queues of an organization, by name.
SELECT * FROM spool.queue_config WHERE organization_id = $1 ORDER BY queue_name LIMIT $2;
