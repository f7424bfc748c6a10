-- Server-enforced timeouts. Until now timeout_seconds was only a hint that
-- the TypeScript SDK enforced in its own process; a worker on another
-- client that kept heartbeating held a job for ever. From this version the
-- server ends an attempt that outlives its deadline, but only for a
-- timeout somebody chose: the job's own timeout_seconds, its schedule's, or
-- a default_timeout the operator set on the queue. The built-in default
-- (300 s) stays a hint: workers of long jobs have relied on heartbeats past
-- it, and would otherwise have their jobs failed by an upgrade.
--
-- timeout_enforced is decided once, at insert (job-insert-many.sql,
-- workflow-create.sql). Jobs that exist before this migration keep the old
-- behaviour (false): whether their timeout was chosen was never recorded.
ALTER TABLE spool.jobs ADD COLUMN timeout_enforced boolean NOT NULL DEFAULT false;
-- The current attempt's deadline: set by the claim (claim time +
-- timeout_seconds) for an enforced job, NULL otherwise, so a job that is not
-- enforced pays for one NULL per claim. The lease never outlives it
-- (claim and heartbeat clamp lease_expires_at to it), so the lease reaper
-- finds timed-out attempts among the expired leases it already reads. Left
-- as it was when the attempt ends; the next claim overwrites it.
ALTER TABLE spool.jobs ADD COLUMN deadline_at timestamptz;

-- Whether the operator chose the queue's default_timeout (PUT
-- /queues/{name}/config with default_timeout). Rows are created with 300
-- when the field is not sent, so a value other than 300 is taken as chosen.
ALTER TABLE spool.queue_config ADD COLUMN default_timeout_set boolean NOT NULL DEFAULT false;
UPDATE spool.queue_config SET default_timeout_set = true WHERE default_timeout <> 300;

-- The same for a schedule's timeout_seconds (stored as 300 when not given):
-- the jobs it fires are enforced only when it was given, and otherwise take
-- the queue's default like any job enqueued without one.
ALTER TABLE spool.schedules ADD COLUMN timeout_set boolean NOT NULL DEFAULT false;
UPDATE spool.schedules SET timeout_set = true WHERE timeout_seconds <> 300;

-- The reaper writes the event `timeout` (processing -> pending, deadletter
-- or cancelled: moves spool.job_transitions already has, so the state
-- machine's rows do not change; JOB_MOVES lists the event). It is a failure
-- like lease_expired, and the queue figures count it so (the view below
-- repeats queue-stats-rollup.sql's counters, as migration 023's did).
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
       CASE WHEN u.to_status IN ('failed', 'deadletter') THEN n ELSE 0 END AS deadlettered,
       CASE WHEN u.event = 'expire' THEN n ELSE 0 END AS expired
FROM unread u
CROSS JOIN LATERAL (SELECT coalesce(cardinality(u.job_ids), 1)::bigint AS n) c;
