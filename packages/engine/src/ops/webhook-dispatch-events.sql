-- Turns the event log (spool.events) into webhook deliveries, as
-- webhook-dispatch.sql does for job history: reads rows after $1 (at most
-- $3) plus re-read gap ids $2 (see history-cursor.ts) and creates one
-- delivery per subscribed enabled webhook (registered before the event).
-- The unique key on (event id, webhook) makes re-reading harmless. Returns
-- the ids read and the snapshot bounds that settle gaps.
WITH batch AS (
  (SELECT * FROM spool.events WHERE id > $1 ORDER BY id LIMIT $3)
  UNION ALL
  (SELECT * FROM spool.events WHERE id = ANY($2::bigint[]) AND id <= $1)
),
subscribed AS (
  INSERT INTO spool.webhook_deliveries (organization_id, webhook_id, event_id, event, payload)
  SELECT e.organization_id, w.id, e.id, e.type,
         jsonb_build_object('event', e.type, 'timestamp', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', e.data)
  FROM batch e
  JOIN spool.outgoing_webhooks w
    ON w.organization_id = e.organization_id AND w.enabled AND e.type = ANY(w.events) AND w.created_at <= e.created_at
  ORDER BY e.id
  ON CONFLICT DO NOTHING
  RETURNING 1
)
SELECT (SELECT coalesce(array_agg(id), '{}') FROM batch) AS ids,
       pg_snapshot_xmin(pg_current_snapshot())::text AS snapshot_xmin,
       pg_snapshot_xmax(pg_current_snapshot())::text AS snapshot_xmax,
       (SELECT count(*) FROM subscribed)::int AS created;
