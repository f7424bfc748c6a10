-- Remembers the delivery keys of an accepted delivery.
INSERT INTO spool.incoming_webhook_deliveries (organization_id, provider, delivery_key)
SELECT $1, $2, key FROM unnest($3::text[]) AS key
ON CONFLICT DO NOTHING;
