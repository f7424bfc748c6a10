-- Logs a delivery made synchronously (the `test` endpoint): already final.
INSERT INTO spool.webhook_deliveries (organization_id, webhook_id, event, payload, status, attempts, status_code,
                                      response_body, error, delivered_at)
VALUES ($1, $2, $3, $4::jsonb, $5, 1, $6, $7, $8, CASE WHEN $5 = 'success' THEN now() END)
RETURNING id;
