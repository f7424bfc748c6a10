-- Turns job history into webhook deliveries (the durable queue). Reads rows
-- after $1 (at most $3) plus re-read gap ids $2 (see history-cursor.ts),
-- creates one delivery per subscribed enabled webhook (registered before the
-- event) and one per job completion_webhook (completed or dead-lettered).
-- Unique keys on (event id, target) make re-reading harmless: a row of
-- routine transitions holds many jobs' events (migration 021), each with its
-- own event id (row id × 1024 + position). Returns the row ids read and the
-- snapshot bounds that settle gaps.
-- About $3 events per transaction (spool.job_history_after, migration 021).
WITH batch AS (
  (SELECT * FROM spool.job_history_after($1, $3))
  UNION ALL
  (SELECT * FROM spool.job_history WHERE id = ANY($2::bigint[]) AND id <= $1)
),
expanded AS (
  SELECT b.id * 1024 + (x.pos - 1) AS id, b.organization_id, x.job_id, b.queue_name, b.event, b.from_status,
         b.to_status, b.worker_id, b.message, b.created_at
  FROM batch b
  CROSS JOIN LATERAL unnest(coalesce(b.job_ids, ARRAY[b.job_id])) WITH ORDINALITY AS x(job_id, pos)
),
events AS (
  SELECT b.*,
         CASE
           WHEN b.event = 'create' THEN 'job.created'
           WHEN b.event = 'claim' THEN 'job.started'
           WHEN b.event = 'complete' THEN 'job.completed'
           WHEN b.event IN ('fail_retry', 'fail_final', 'lease_expired', 'timeout') AND b.to_status = 'cancelled' THEN 'job.cancelled'
           WHEN b.event IN ('fail_retry', 'fail_final', 'lease_expired', 'timeout') THEN 'job.failed'
           WHEN b.event IN ('cancel', 'expire') THEN 'job.cancelled'
           -- A snooze is no failure; only one that ends a cancellation is announced.
           WHEN b.event = 'snooze' AND b.to_status = 'cancelled' THEN 'job.cancelled'
         END AS webhook_event
  FROM expanded b
),
subscribed AS (
  INSERT INTO spool.webhook_deliveries (organization_id, webhook_id, job_id, history_id, event, payload)
  SELECT e.organization_id, w.id, e.job_id, e.id, e.webhook_event,
         jsonb_build_object('event', e.webhook_event, 'timestamp', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', jsonb_build_object(
           'job_id', e.job_id, 'queue_name', e.queue_name, 'status', e.to_status, 'previous_status', e.from_status,
           'priority', j.priority, 'retry_count', j.retry_count, 'worker_id', e.worker_id,
           'result', CASE WHEN e.event = 'complete' THEN j.result END, 'error', e.message))
  FROM events e
  JOIN spool.outgoing_webhooks w
    ON w.organization_id = e.organization_id AND w.enabled AND e.webhook_event = ANY(w.events) AND w.created_at <= e.created_at
  LEFT JOIN spool.jobs j ON j.id = e.job_id AND j.organization_id = e.organization_id
  WHERE e.webhook_event IS NOT NULL
    -- evaluated once: with no enabled webhook anywhere, no row is joined at all
    AND EXISTS (SELECT 1 FROM spool.outgoing_webhooks WHERE enabled)
  ON CONFLICT DO NOTHING
  RETURNING 1
),
completion AS (
  INSERT INTO spool.webhook_deliveries (organization_id, job_id, history_id, url, event, payload)
  SELECT e.organization_id, j.id, e.id, j.completion_webhook, x.name,
         jsonb_build_object('event', x.name, 'job_id', j.id, 'queue_name', j.queue_name, 'status', e.to_status,
                            'result', j.result, 'error', j.last_error, 'retry_count', j.retry_count,
                            'created_at', to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'completed_at', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
  FROM events e
  -- LATERAL: one probe of the small partial index per completion, whatever the statistics say
  CROSS JOIN LATERAL (
    SELECT * FROM spool.jobs j
    WHERE j.organization_id = e.organization_id AND j.id = e.job_id AND j.completion_webhook IS NOT NULL
    LIMIT 1 -- keeps the subquery from being flattened into a join the planner may reorder
  ) j
  CROSS JOIN LATERAL (
    SELECT CASE WHEN e.to_status = 'completed' THEN 'job.completed'
                WHEN e.to_status = 'deadletter' THEN 'job.deadlettered'
                WHEN e.to_status = 'failed' THEN 'job.failed' END AS name
  ) x
  WHERE x.name IS NOT NULL AND e.event IN ('complete', 'fail_final', 'lease_expired', 'timeout')
  ON CONFLICT DO NOTHING
  RETURNING 1
)
SELECT (SELECT coalesce(array_agg(id), '{}') FROM batch) AS ids,
       (SELECT count(*) FROM expanded WHERE id >= ($1::bigint + 1) * 1024)::int AS events,
       pg_snapshot_xmin(pg_current_snapshot())::text AS snapshot_xmin,
       pg_snapshot_xmax(pg_current_snapshot())::text AS snapshot_xmax,
       (SELECT count(*) FROM subscribed)::int + (SELECT count(*) FROM completion)::int AS created;
