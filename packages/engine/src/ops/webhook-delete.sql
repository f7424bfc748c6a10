-- Deletes a webhook; its delivery log and pending deliveries go with it.
DELETE FROM spool.outgoing_webhooks WHERE organization_id = $1 AND id = $2 RETURNING id;
