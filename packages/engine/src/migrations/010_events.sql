-- The event log for everything that is not a job transition (job events come
-- from spool.job_history): queue.paused, queue.resumed, worker.registered,
-- worker.deregistered, schedule.triggered (docs/compatibility.md §1.7, §4). Each row is
-- written by the statement that makes the change, so an event exists exactly
-- when its change committed. Realtime (docs/realtime.md) and the webhook
-- dispatcher (docs/webhooks.md) read it like the job history: by id, with the
-- same late-commit gap tracking (history-cursor.ts). Old rows are pruned by
-- the job retention service (ops/event-prune.sql).
CREATE TABLE spool.events (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  type            text NOT NULL CHECK (type IN ('queue.paused', 'queue.resumed', 'worker.registered', 'worker.deregistered', 'schedule.triggered')),
  -- the event's data as sent (snake_case keys, docs/compatibility.md §4), without timestamp (that is created_at)
  data            jsonb NOT NULL CHECK (jsonb_typeof(data) = 'object'),
  created_at      timestamptz NOT NULL DEFAULT now()
);
-- serves: a resuming realtime client's replay of one organization's events
-- (ops/event-replay.sql: organization_id = $1 AND id in a range or a list), and
-- the cascade when an organization is deleted.
-- The hub's and the dispatcher's tail reads (id > $1 ORDER BY id) use the primary key.
CREATE INDEX events_org_id_idx ON spool.events (organization_id, id);
-- serves: retention (ops/event-prune.sql: the oldest rows past the window)
CREATE INDEX events_created_idx ON spool.events (created_at);

-- Webhook deliveries announcing an event of spool.events (null otherwise).
-- Nullable without a default: adding it rewrites nothing.
ALTER TABLE spool.webhook_deliveries ADD COLUMN event_id bigint;
-- serves: idempotent dispatch of events (re-reading the log creates nothing twice)
CREATE UNIQUE INDEX webhook_deliveries_log_event_key ON spool.webhook_deliveries (event_id, webhook_id) WHERE event_id IS NOT NULL;

-- The webhook dispatcher's position in spool.events (see 006: event_cursors).
INSERT INTO spool.event_cursors (name, scanned_to) VALUES ('webhook-events', 0);
