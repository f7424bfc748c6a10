-- One queue's config, if it has one.
SELECT * FROM spool.queue_config WHERE organization_id = $1 AND queue_name = $2;
