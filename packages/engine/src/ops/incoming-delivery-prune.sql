-- Forgets accepted deliveries older than $1 ms (incoming_webhook_deliveries_created_idx).
DELETE FROM spool.incoming_webhook_deliveries
WHERE (organization_id, provider, delivery_key) IN (
  SELECT organization_id, provider, delivery_key FROM spool.incoming_webhook_deliveries
  WHERE created_at < now() - make_interval(secs => $1::float8 / 1000)
  ORDER BY created_at
  LIMIT $2
)
RETURNING 1;
