-- The routine transitions of many jobs in one log row (docs/performance.md,
-- "History rows per statement").
--
-- Every enqueue, claim and completion wrote one job_history row per job,
-- each with two index entries: about a third of a job's WAL. Those three
-- transitions now write one row per statement and (organization, queue,
-- worker), naming its jobs in `job_ids` (claims also their `lease_ids`), with
-- `job_id` null. Everything else (failures with their errors, retries,
-- lease expiries, releases, cancellations, promotions, purges, and a claim
-- that re-runs a job) still writes one row per job: those are rare, and
-- their details belong to one job.
--
-- A row's events are numbered within it: event id = row id × 1024 + the
-- job's position in `job_ids` (0 for a one-job row). Realtime streams, the
-- webhook dispatcher and the metrics counters read rows in id order as
-- before (history-cursor.ts: rows still commit in any order) and expand
-- them; a row holds at most 1024 events (the writers split larger groups).
ALTER TABLE spool.job_history ALTER COLUMN job_id DROP NOT NULL;
-- Nullable without defaults: adding them rewrites nothing.
ALTER TABLE spool.job_history ADD COLUMN job_ids uuid[];
ALTER TABLE spool.job_history ADD COLUMN lease_ids uuid[];
ALTER TABLE spool.job_history ADD CONSTRAINT job_history_one_or_many CHECK (
  (job_id IS NULL) = (job_ids IS NOT NULL)
  AND (job_ids IS NULL OR cardinality(job_ids) BETWEEN 1 AND 1024)
  AND (lease_ids IS NULL OR (job_ids IS NOT NULL AND cardinality(lease_ids) = cardinality(job_ids)))
) NOT VALID;

-- serves: a job's audit trail (spool.job_timeline): a job's routine events
-- are found by organization, event and the time the job row records for
-- them (created_at, started_at, completed_at: the statement's now(), which
-- is the row's created_at). One entry per statement, not per job.
CREATE INDEX job_history_batch_idx ON spool.job_history (organization_id, event, created_at)
  WHERE job_id IS NULL;

-- serves: pruning routine rows by age, queue by queue (ops/history-prune.sql;
-- a row holds jobs of one queue; per-job rows go with their jobs).
CREATE INDEX job_history_batch_queue_idx ON spool.job_history (organization_id, queue_name, created_at) WHERE job_id IS NULL;

-- Every job event, one row each, with its event id: what readers that do
-- not care about the storage see (tests, ad-hoc queries, the timeline).
CREATE VIEW spool.job_events AS
SELECT h.id AS log_id, h.id * 1024 + (e.pos - 1) AS event_id, h.organization_id, e.job_id, h.queue_name, h.event,
       h.from_status, h.to_status, h.worker_id, coalesce(e.lease_id, h.lease_id) AS lease_id, h.message, h.created_at
FROM spool.job_history h
CROSS JOIN LATERAL unnest(coalesce(h.job_ids, ARRAY[h.job_id]), h.lease_ids) WITH ORDINALITY AS e(job_id, lease_id, pos);

-- The rows after a log position for a reader (history-tail.sql, the realtime
-- hub; webhook-dispatch.sql): at most max_events rows, and rows only while
-- the events before them are fewer than max_events (the first row always),
-- so a read of rows of many jobs stays about max_events events.
CREATE FUNCTION spool.job_history_after(after_id bigint, max_events integer)
RETURNS SETOF spool.job_history
LANGUAGE sql STABLE AS $$
  SELECT (x.h).*
  FROM (
    SELECT h, sum(coalesce(cardinality(h.job_ids), 1)) OVER (ORDER BY h.id) - coalesce(cardinality(h.job_ids), 1) AS before
    FROM spool.job_history h
    WHERE h.id > after_id
    ORDER BY h.id
    LIMIT max_events
  ) x
  WHERE x.before < max_events
$$;

-- One job's recorded transitions, oldest first: its own rows (the job index)
-- and its routine events, found in the rows of the statements that made
-- them at the times the job row keeps. A job completes once (a manual retry
-- moves only failed, dead-lettered and cancelled jobs), and only its first
-- claim is routine (started_at is the first start), so each time names one
-- row. A routine row pruned by age (JobRetention: its queue's longest
-- retention window) leaves the job's created event to be told from its
-- columns, with event id 0.
CREATE FUNCTION spool.job_timeline(org uuid, job uuid)
RETURNS TABLE (id bigint, event text, from_status text, to_status text, worker_id text, lease_id uuid, message text, created_at timestamptz)
LANGUAGE sql STABLE AS $$
  WITH j AS (
    SELECT created_at, started_at, completed_at, status, scheduled_at FROM spool.jobs WHERE organization_id = org AND id = job
  ),
  entries AS (
    SELECT h.id * 1024 AS id, h.event, h.from_status, h.to_status, h.worker_id, h.lease_id, h.message, h.created_at
    FROM spool.job_history h
    WHERE h.organization_id = org AND h.job_id = job
    UNION ALL
    SELECT h.id * 1024 + (e.pos - 1), h.event, h.from_status, h.to_status, h.worker_id, e.lease_id, h.message, h.created_at
    FROM j
    CROSS JOIN LATERAL (VALUES ('create', j.created_at), ('claim', j.started_at), ('complete', j.completed_at)) AS r(event, at)
    JOIN spool.job_history h ON h.organization_id = org AND h.job_id IS NULL AND h.event = r.event AND h.created_at = r.at
    CROSS JOIN LATERAL unnest(h.job_ids, h.lease_ids) WITH ORDINALITY AS e(job_id, lease_id, pos)
    WHERE e.job_id = job
  )
  -- A routine completion ends the lease of the job's latest claim.
  SELECT e.id, e.event, e.from_status, e.to_status, e.worker_id,
         CASE WHEN e.event = 'complete' AND e.lease_id IS NULL
              THEN (SELECT c.lease_id FROM entries c WHERE c.event = 'claim' AND c.id < e.id ORDER BY c.id DESC LIMIT 1)
              ELSE e.lease_id END,
         e.message, e.created_at
  FROM entries e
  UNION ALL
  SELECT 0, 'create', NULL, CASE WHEN j.scheduled_at > j.created_at THEN 'scheduled' ELSE 'pending' END,
         NULL, NULL, NULL, j.created_at
  FROM j
  WHERE NOT EXISTS (SELECT 1 FROM entries WHERE entries.event = 'create')
  ORDER BY id
$$;
