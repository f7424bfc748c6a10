-- Writes every mutable field of a locked schedule (the caller merged the
-- patch and recomputed next_run_at). The NOTIFY wakes the firer.
WITH updated AS (
  UPDATE spool.schedules
  SET name = $3, description = $4, cron_expression = $5, timezone = $6, queue_name = $7,
      payload_template = $8::jsonb, priority = $9, max_retries = $10, timeout_seconds = $11,
      is_active = $12, missed_policy = $13, next_run_at = $14, tags = $15::jsonb, metadata = $16::jsonb, timeout_set = $17, max_retries_set = $18,
      updated_at = now()
  WHERE organization_id = $1 AND id = $2
  RETURNING *
)
SELECT u.*
FROM updated u, LATERAL (SELECT pg_notify('spool_schedules', u.id::text)) AS n;
