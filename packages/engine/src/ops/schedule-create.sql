-- Creates a schedule. next_run_at is computed by the caller (croner, in the
-- schedule's time zone). The NOTIFY wakes the leader's firer so that it
-- re-reads the earliest next_run_at instead of sleeping past this one.
WITH created AS (
  INSERT INTO spool.schedules (id, organization_id, name, description, cron_expression, timezone, queue_name,
                               payload_template, priority, max_retries, timeout_seconds, is_active, missed_policy,
                               next_run_at, tags, metadata, timeout_set, max_retries_set)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13, $14, $15::jsonb, $16::jsonb, $17, $18)
  RETURNING *
)
SELECT c.*
FROM created c, LATERAL (SELECT pg_notify('spool_schedules', c.id::text)) AS n;
