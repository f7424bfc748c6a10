-- Editing a waiting or dead-lettered job (PATCH /jobs/{id}, docs/jobs-api.md,
-- "Edit a job"), and who did it.
--
-- job_history gets the credential that asked for a change (`actor`: the API
-- key, or the key and login session of an access token) and what an edit
-- changed (`details`: each changed field with its old and new value). Both
-- are nullable without defaults, so adding them rewrites nothing; the
-- routine rows of migration 021 and the rows the server writes on its own
-- (failures, lease expiries, promotions) leave them null.
ALTER TABLE spool.job_history
  ADD COLUMN actor text CHECK (char_length(actor) <= 255),
  ADD COLUMN details jsonb CHECK (jsonb_typeof(details) = 'object');

-- An edit moves a pending job whose new scheduled_at is in the future to
-- scheduled; the other way (a scheduled job edited to now or the past) is
-- the move the promoter already makes. Inserting the row regenerates the
-- state machine's triggers (migration 022).
INSERT INTO spool.job_transitions (from_status, to_status) VALUES ('pending', 'scheduled');

-- The timeline shows the new columns. Its result type changes, so the
-- function is dropped and made again (its callers, ops/job-history.sql and
-- ops/realtime-job-state.sql, are plain SQL that PostgreSQL does not track
-- as dependents). Otherwise as in migration 021.
DROP FUNCTION spool.job_timeline(uuid, uuid);
CREATE FUNCTION spool.job_timeline(org uuid, job uuid)
RETURNS TABLE (id bigint, event text, from_status text, to_status text, worker_id text, lease_id uuid, message text, created_at timestamptz,
               actor text, details jsonb)
LANGUAGE sql STABLE AS $$
  WITH j AS (
    SELECT created_at, started_at, completed_at, status, scheduled_at FROM spool.jobs WHERE organization_id = org AND id = job
  ),
  entries AS (
    SELECT h.id * 1024 AS id, h.event, h.from_status, h.to_status, h.worker_id, h.lease_id, h.message, h.created_at, h.actor, h.details
    FROM spool.job_history h
    WHERE h.organization_id = org AND h.job_id = job
    UNION ALL
    SELECT h.id * 1024 + (e.pos - 1), h.event, h.from_status, h.to_status, h.worker_id, e.lease_id, h.message, h.created_at, h.actor, h.details
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
         e.message, e.created_at, e.actor, e.details
  FROM entries e
  UNION ALL
  SELECT 0, 'create', NULL, CASE WHEN j.scheduled_at > j.created_at THEN 'scheduled' ELSE 'pending' END,
         NULL, NULL, NULL, j.created_at, NULL, NULL
  FROM j
  WHERE NOT EXISTS (SELECT 1 FROM entries WHERE entries.event = 'create')
  ORDER BY id
$$;

-- Every event one row each (migration 021), with the new columns last.
CREATE OR REPLACE VIEW spool.job_events AS
SELECT h.id AS log_id, h.id * 1024 + (e.pos - 1) AS event_id, h.organization_id, e.job_id, h.queue_name, h.event,
       h.from_status, h.to_status, h.worker_id, coalesce(e.lease_id, h.lease_id) AS lease_id, h.message, h.created_at,
       h.actor, h.details
FROM spool.job_history h
CROSS JOIN LATERAL unnest(coalesce(h.job_ids, ARRAY[h.job_id]), h.lease_ids) WITH ORDINALITY AS e(job_id, lease_id, pos);

-- An edit of a dead-lettered job writes a row to deadletter (from
-- deadletter): it dead-letters nothing, so the queue figures do not count
-- it (queue-stats-rollup.sql does the same; the view repeats its counters,
-- as migration 026's did).
CREATE OR REPLACE VIEW spool.queue_stats_pending AS
WITH unread AS (
  -- Subqueries that a caller's filters cannot enter: whatever it filters on,
  -- the rows are found by primary key, and at most 10,000 of them.
  SELECT h.*
  FROM spool.event_cursors c
  CROSS JOIN LATERAL (
    SELECT h.id, h.organization_id, h.queue_name, h.event, h.to_status, h.job_ids, h.created_at
    FROM spool.job_history h
    WHERE h.id > c.scanned_to
    ORDER BY h.id
    LIMIT 10000
  ) h
  WHERE c.name = 'queue-stats'
  UNION ALL
  SELECT h.*
  FROM spool.event_cursors c
  CROSS JOIN LATERAL jsonb_array_elements(c.gaps) AS g(gap)
  CROSS JOIN LATERAL (
    SELECT h.id, h.organization_id, h.queue_name, h.event, h.to_status, h.job_ids, h.created_at
    FROM spool.job_history h
    WHERE h.id = (g.gap ->> 'id')::bigint
    OFFSET 0
  ) h
  WHERE c.name = 'queue-stats'
)
SELECT u.id, u.organization_id, u.queue_name, u.event, u.job_ids, u.created_at,
       CASE WHEN u.event = 'create' THEN n ELSE 0 END AS enqueued,
       CASE WHEN u.event = 'claim' THEN n ELSE 0 END AS started,
       CASE WHEN u.event = 'complete' THEN n ELSE 0 END AS completed,
       CASE WHEN u.event IN ('fail_retry', 'fail_final', 'lease_expired', 'timeout') AND u.to_status IS DISTINCT FROM 'cancelled' THEN n ELSE 0 END AS failed,
       CASE WHEN u.event IN ('fail_retry', 'lease_expired', 'timeout') AND u.to_status IN ('pending', 'scheduled') THEN n ELSE 0 END AS retried,
       CASE WHEN u.to_status IN ('failed', 'deadletter') AND u.event <> 'edit' THEN n ELSE 0 END AS deadlettered,
       CASE WHEN u.event = 'expire' THEN n ELSE 0 END AS expired
FROM unread u
CROSS JOIN LATERAL (SELECT coalesce(cardinality(u.job_ids), 1)::bigint AS n) c;
