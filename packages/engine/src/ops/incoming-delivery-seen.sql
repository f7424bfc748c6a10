-- Whether any of the delivery keys was already turned into a job.
SELECT EXISTS (
  SELECT 1 FROM spool.incoming_webhook_deliveries
  WHERE organization_id = $1 AND provider = $2 AND delivery_key = ANY ($3::text[])
) AS seen;
