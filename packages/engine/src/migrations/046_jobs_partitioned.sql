-- Finished jobs out of the hot table: spool.jobs becomes a table partitioned
-- by LIST on `phase`. spool.jobs_live (the table as it was, attached) holds
-- every status a job can still leave: pending, scheduled, processing, failed
-- and deadletter (failed and deadletter can be retried, replayed and edited).
-- spool.jobs_done holds completed and cancelled jobs, which no row of
-- spool.job_transitions leaves. Claims, fences, heartbeats, the reaper and the
-- promoter then walk a heap and indexes without the retained finished rows
-- (docs/performance.md, "Finished jobs in time partitions").
--
-- `phase` is set by the statements that finish a job (phase = 'done' with
-- status completed or cancelled): PostgreSQL moves the row, as a delete from
-- jobs_live and an insert into jobs_done. It cannot be a generated column: a
-- generated column cannot be a partition key. A statement that races with a
-- move gets SQLSTATE 40001 instead of re-checking the row; db.ts runs such a
-- statement again (and the transactions that opt in), and it then sees the
-- job finished.
--
-- What a partitioned table cannot enforce leaves it:
-- - a unique index must contain the partition key: the primary key becomes
--   (id, phase), and idempotency keys move to spool.job_idempotency_keys,
--   written in the enqueue's statement and deleted with the job;
-- - the foreign key of dead_letter_queue.job_id goes: retention, the DLQ
--   purge and organization deletion delete those rows themselves.

-- 1. The old table becomes the live partition.
ALTER TABLE spool.dead_letter_queue DROP CONSTRAINT dead_letter_queue_job_id_fkey;
DROP TRIGGER jobs_status_start ON spool.jobs;
DROP TRIGGER jobs_status_move ON spool.jobs;
ALTER TABLE spool.jobs RENAME TO jobs_live;
ALTER TABLE spool.jobs_live DROP CONSTRAINT jobs_pkey;
ALTER TABLE spool.jobs_live ADD COLUMN phase text NOT NULL DEFAULT 'live';
-- Same columns, defaults and CHECK constraints (by name) as the live table.
CREATE TABLE spool.jobs (LIKE spool.jobs_live INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
  PARTITION BY LIST (phase);
-- The partition bound, proved by a constraint (one scan) so that ATTACH
-- needs no scan of its own.
ALTER TABLE spool.jobs_live ADD CONSTRAINT jobs_live_bound CHECK (phase = 'live');
ALTER TABLE spool.jobs ATTACH PARTITION spool.jobs_live FOR VALUES IN ('live');
ALTER TABLE spool.jobs_live DROP CONSTRAINT jobs_live_bound;

-- The lease fence (migration 042) takes a row of the partitioned table.
DROP FUNCTION spool.job_fence(spool.jobs_live, text, uuid);
CREATE FUNCTION spool.job_fence(j spool.jobs, caller_worker_id text, caller_lease_id uuid) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN j.lease_id IS NOT NULL AND j.assigned_worker_id = caller_worker_id AND (caller_lease_id IS NULL OR j.lease_id = caller_lease_id)
      THEN CASE WHEN j.deadline_at IS NULL OR j.deadline_at > now() THEN 'held' ELSE 'timed_out' END
    WHEN caller_lease_id IS NOT NULL AND j.lease_id IS DISTINCT FROM caller_lease_id THEN 'lease_mismatch'
    ELSE 'not_owned'
  END
$$;

-- Finished rows are written once and read by id, listings, stats and
-- retention: no free space kept for updates (the default fillfactor).
CREATE TABLE spool.jobs_done PARTITION OF spool.jobs FOR VALUES IN ('done');
-- What the table's CHECKs already imply for a finished row, spelled out for
-- the planner: it leaves jobs_done out of a statement whose WHERE these
-- refute (a status literal such as 'processing', in_backoff), as partition
-- pruning leaves it out for phase = 'live'.
ALTER TABLE spool.jobs_done
  ADD CONSTRAINT jobs_done_final CHECK (status IN ('completed', 'cancelled')),
  ADD CONSTRAINT jobs_done_not_in_backoff CHECK (NOT in_backoff);

ALTER TABLE spool.jobs ADD CONSTRAINT jobs_pkey PRIMARY KEY (id, phase);

-- 2. Idempotency keys: one row per keyed job, for the job's whole life.
CREATE TABLE spool.job_idempotency_keys (
  organization_id uuid NOT NULL,
  idempotency_key text NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
  job_id uuid NOT NULL,
  PRIMARY KEY (organization_id, idempotency_key)
);
INSERT INTO spool.job_idempotency_keys (organization_id, idempotency_key, job_id)
SELECT organization_id, idempotency_key, id FROM spool.jobs_live WHERE idempotency_key IS NOT NULL;
DROP INDEX spool.jobs_idempotency_key;

-- 3. Finished jobs move to their partition (no trigger is installed yet).
UPDATE spool.jobs SET phase = 'done' WHERE phase = 'live' AND status IN ('completed', 'cancelled');

-- The reads of finished jobs: by id (jobs_pkey), the listings and retention
-- (as jobs_org_created_idx and jobs_org_queue_status_idx), workflows, job-key
-- throttle windows and completion webhooks. What only unfinished jobs need
-- (claims, backoff, expiry, the scheduled, processing, concurrency-key,
-- dead-letter and active job-key indexes) stays on jobs_live only.
CREATE INDEX jobs_done_org_created_idx ON spool.jobs_done (organization_id, created_at DESC);
CREATE INDEX jobs_done_org_queue_status_idx ON spool.jobs_done (organization_id, queue_name, status, created_at DESC);
CREATE INDEX jobs_done_workflow_idx ON spool.jobs_done (organization_id, workflow_id) WHERE workflow_id IS NOT NULL;
CREATE INDEX jobs_done_job_key_created_idx ON spool.jobs_done (organization_id, queue_name, job_key, created_at DESC)
  WHERE job_key IS NOT NULL;
CREATE INDEX jobs_done_completion_webhook_idx ON spool.jobs_done (organization_id, id) WHERE completion_webhook IS NOT NULL;

-- 4. The claimable view reads the live partition: claims address rows by
-- ctid, which means something only within one partition.
CREATE OR REPLACE VIEW spool.claimable_jobs AS
SELECT id, organization_id, queue_name, priority, created_at, concurrency_key, fairness_key, ctid AS tid
FROM spool.jobs_live
WHERE status = 'pending' AND dependencies_met IS NOT FALSE AND NOT in_backoff
  AND (scheduled_at IS NULL OR scheduled_at <= now())
  AND (expires_at IS NULL OR expires_at > now());

-- 5. The state machine across partitions. A move between partitions fires
-- no UPDATE trigger after it (PostgreSQL runs it as a delete and an insert),
-- so the triggers are:
--   jobs_status_start (AFTER INSERT on jobs_live): a new job starts as listed;
--   jobs_status_move (AFTER UPDATE OF status on jobs_live): a move within
--     the live partition is listed, and never ends finished (a finishing
--     move must set phase = 'done');
--   jobs_status_finish (AFTER DELETE on jobs_live, only for statuses from
--     which some finishing move is not listed): a row that left for
--     jobs_done made a listed move;
--   jobs_status_final (BEFORE UPDATE OF status on jobs_done): no unlisted
--     move leaves a finished job, which refuses a move back to jobs_live too
--     (PostgreSQL fires BEFORE UPDATE triggers on the partition a row leaves).
-- BEFORE only on jobs_done: its old row is fetched by locking it, a cost the
-- live side's AFTER triggers avoid (migration 022); finished rows are rarely
-- updated. The AFTER DELETE check runs at the statement's end, when the
-- moved row is in jobs_done.
CREATE OR REPLACE FUNCTION spool.job_refuse_status() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  finished text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    RAISE EXCEPTION USING ERRCODE = 'SP001', TABLE = 'jobs', SCHEMA = 'spool', COLUMN = 'status',
      MESSAGE = format('job state machine: a new job cannot start as %s (job %s; allowed starts are the rows of spool.job_transitions with no from_status)', NEW.status, NEW.id);
  END IF;
  IF TG_OP = 'DELETE' THEN
    SELECT d.status INTO finished FROM spool.jobs_done d WHERE d.id = OLD.id;
    IF finished IS NULL OR EXISTS (SELECT 1 FROM spool.job_transitions t WHERE t.from_status = OLD.status AND t.to_status = finished) THEN
      RETURN NULL;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'SP001', TABLE = 'jobs', SCHEMA = 'spool', COLUMN = 'status',
      MESSAGE = format('job state machine: job %s cannot move from %s to %s (not a row of spool.job_transitions)', OLD.id, OLD.status, finished);
  END IF;
  IF TG_TABLE_NAME = 'jobs_live' AND NEW.status IN ('completed', 'cancelled')
     AND EXISTS (SELECT 1 FROM spool.job_transitions t WHERE t.from_status = OLD.status AND t.to_status = NEW.status) THEN
    RAISE EXCEPTION USING ERRCODE = 'SP001', TABLE = 'jobs', SCHEMA = 'spool', COLUMN = 'phase',
      MESSAGE = format('job state machine: job %s moved from %s to %s but stayed in spool.jobs_live (a finishing move sets phase = ''done'')', NEW.id, OLD.status, NEW.status);
  END IF;
  RAISE EXCEPTION USING ERRCODE = 'SP001', TABLE = 'jobs', SCHEMA = 'spool', COLUMN = 'status',
    MESSAGE = format('job state machine: job %s cannot move from %s to %s (not a row of spool.job_transitions)', NEW.id, OLD.status, NEW.status);
END
$$;

CREATE OR REPLACE FUNCTION spool.job_transitions_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  starts text;
  moves text;
  done_moves text;
  sure text;
BEGIN
  SELECT string_agg(format('%L', to_status), ', ' ORDER BY to_status) INTO starts
  FROM spool.job_transitions WHERE from_status IS NULL;
  SELECT string_agg(format('(%L, %L)', from_status, to_status), ', ' ORDER BY from_status, to_status) INTO moves
  FROM spool.job_transitions WHERE from_status IS NOT NULL;
  SELECT string_agg(format('(%L, %L)', from_status, to_status), ', ' ORDER BY from_status, to_status) INTO done_moves
  FROM spool.job_transitions WHERE from_status IN ('completed', 'cancelled');
  -- The live statuses from which every finishing move is listed: a row
  -- leaving jobs_live from one of them needs no check.
  SELECT string_agg(format('%L', s), ', ' ORDER BY s) INTO sure
  FROM unnest(ARRAY['pending', 'scheduled', 'processing', 'failed', 'deadletter']) AS s
  WHERE NOT EXISTS (SELECT 1 FROM unnest(ARRAY['completed', 'cancelled']) AS f
                    WHERE NOT EXISTS (SELECT 1 FROM spool.job_transitions t WHERE t.from_status = s AND t.to_status = f));

  DROP TRIGGER IF EXISTS jobs_status_start ON spool.jobs_live;
  DROP TRIGGER IF EXISTS jobs_status_move ON spool.jobs_live;
  DROP TRIGGER IF EXISTS jobs_status_finish ON spool.jobs_live;
  DROP TRIGGER IF EXISTS jobs_status_final ON spool.jobs_done;
  EXECUTE format('CREATE TRIGGER jobs_status_start AFTER INSERT ON spool.jobs_live FOR EACH ROW WHEN (%s) '
                 'EXECUTE FUNCTION spool.job_refuse_status()',
                 CASE WHEN starts IS NULL THEN 'true' ELSE format('NEW.status NOT IN (%s)', starts) END);
  -- The move list first: for a legal move it is false at the move's own row.
  EXECUTE format('CREATE TRIGGER jobs_status_move AFTER UPDATE OF status ON spool.jobs_live FOR EACH ROW WHEN (%s) '
                 'EXECUTE FUNCTION spool.job_refuse_status()',
                 CASE WHEN moves IS NULL THEN 'OLD.status <> NEW.status'
                      ELSE format('((OLD.status, NEW.status) NOT IN (%s) OR NEW.status IN (''completed'', ''cancelled'')) AND OLD.status <> NEW.status', moves) END);
  EXECUTE format('CREATE TRIGGER jobs_status_finish AFTER DELETE ON spool.jobs_live FOR EACH ROW WHEN (%s) '
                 'EXECUTE FUNCTION spool.job_refuse_status()',
                 CASE WHEN sure IS NULL THEN 'true' ELSE format('OLD.status NOT IN (%s)', sure) END);
  EXECUTE format('CREATE TRIGGER jobs_status_final BEFORE UPDATE OF status ON spool.jobs_done FOR EACH ROW WHEN (%s) '
                 'EXECUTE FUNCTION spool.job_refuse_status()',
                 CASE WHEN done_moves IS NULL THEN 'OLD.status <> NEW.status'
                      ELSE format('(OLD.status, NEW.status) NOT IN (%s) AND OLD.status <> NEW.status', done_moves) END);
  RETURN NULL;
END
$$;

-- Regenerates the triggers (a statement trigger fires for no rows too).
UPDATE spool.job_transitions SET to_status = to_status WHERE false;

-- 6. Dependents cancelled by a parent's failure finish too (migration 035).
CREATE OR REPLACE FUNCTION spool.job_dependents_settle(ended uuid[], among uuid[] DEFAULT NULL::uuid[])
 RETURNS TABLE(organization_id uuid, workflow_id uuid, cancelled integer, unblocked integer)
 LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  frontier uuid[] := ended;
  restrict_to uuid[] := among;
  next_frontier uuid[];
  d_org uuid[] := '{}';
  d_workflow uuid[] := '{}';
  d_cancelled integer[] := '{}';
  d_unblocked integer[] := '{}';
  l_org uuid[];
  l_workflow uuid[];
  l_cancelled integer[];
  l_unblocked integer[];
  claimable text[] := '{}';
  l_claimable text[];
BEGIN
  WHILE cardinality(frontier) > 0 LOOP
    WITH parents AS (
      SELECT p.organization_id, p.id, p.status
      FROM spool.jobs p
      WHERE p.id = ANY (frontier) AND p.status IN ('failed', 'deadletter', 'cancelled')
    ),
    edges AS (
      SELECT d.organization_id, d.job_id, d.depends_on_job_id, d.on_parent_failure, p.status AS parent_status
      FROM parents p
      JOIN spool.job_dependencies d ON d.organization_id = p.organization_id AND d.depends_on_job_id = p.id
      WHERE d.on_parent_failure <> 'block'
        AND (restrict_to IS NULL OR d.job_id = ANY (restrict_to))
    ),
    -- Per dependent: cancel when any of these edges says so (the first such
    -- parent is named as the reason), else how many edges are now satisfied.
    per_job AS (
      SELECT e.organization_id, e.job_id,
             bool_or(e.on_parent_failure = 'cancel') AS cancel,
             (count(*) FILTER (WHERE e.on_parent_failure = 'continue'))::int AS satisfied,
             (array_agg(e.depends_on_job_id ORDER BY e.depends_on_job_id) FILTER (WHERE e.on_parent_failure = 'cancel'))[1] AS parent_id,
             (array_agg(e.parent_status ORDER BY e.depends_on_job_id) FILTER (WHERE e.on_parent_failure = 'cancel'))[1] AS parent_status
      FROM edges e
      GROUP BY e.organization_id, e.job_id
    ),
    -- Still blocked, locked in id order (concurrent settles of parents that
    -- share dependents cannot deadlock); a row another transaction changed
    -- first is re-checked on its newest version.
    target AS (
      SELECT j.id, j.status, e.cancel, e.satisfied, e.parent_id, e.parent_status
      FROM per_job e
      JOIN spool.jobs j ON j.id = e.job_id AND j.organization_id = e.organization_id
      WHERE j.status IN ('pending', 'scheduled') AND j.dependencies_met = false
      ORDER BY j.id
      FOR UPDATE OF j
    ),
    cancelled_jobs AS (
      UPDATE spool.jobs j
      SET status = 'cancelled', phase = 'done', in_backoff = false, completed_at = now(), updated_at = now(),
          last_error = format('Cancelled: its dependency %s ended %s (on_parent_failure: cancel)', t.parent_id, t.parent_status)
      FROM target t
      WHERE j.id = t.id AND t.cancel
      RETURNING j.id, j.organization_id, j.queue_name, t.status AS from_status, j.workflow_id, j.dependents_xid,
                j.last_error, t.parent_id, t.parent_status
    ),
    -- Mode all is met when no unsatisfied edge is left, mode any at once.
    released AS (
      UPDATE spool.jobs j
      SET dependencies_remaining = greatest(coalesce(j.dependencies_remaining, 0) - t.satisfied, 0),
          dependencies_met = (coalesce(j.dependency_mode, 'all') = 'any' OR coalesce(j.dependencies_remaining, 0) - t.satisfied <= 0),
          updated_at = now()
      FROM target t
      WHERE j.id = t.id AND NOT t.cancel
      RETURNING j.id, j.organization_id, j.queue_name, j.status, j.workflow_id, j.dependencies_met
    ),
    history AS (
      INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, message, details)
      SELECT c.organization_id, c.id, c.queue_name, 'cancel', c.from_status, 'cancelled', c.last_error,
             jsonb_build_object('reason', 'parent_failed', 'parent_id', c.parent_id, 'parent_status', c.parent_status,
                                'on_parent_failure', 'cancel')
      FROM cancelled_jobs c
    ),
    deltas AS (
      SELECT x.organization_id, x.workflow_id, sum(x.c)::int AS c, sum(x.u)::int AS u
      FROM (
        SELECT c.organization_id, c.workflow_id, 1 AS c, 1 AS u FROM cancelled_jobs c
        UNION ALL
        SELECT r.organization_id, r.workflow_id, 0, 1 FROM released r WHERE r.dependencies_met
      ) x
      GROUP BY x.organization_id, x.workflow_id
    )
    SELECT (SELECT coalesce(array_agg(c.id), '{}') FROM cancelled_jobs c WHERE c.dependents_xid IS NOT NULL),
           (SELECT coalesce(array_agg(r.organization_id::text || ':' || r.queue_name), '{}') FROM released r
             WHERE r.dependencies_met AND r.status = 'pending'),
           (SELECT coalesce(array_agg(d.organization_id), '{}') FROM deltas d),
           (SELECT coalesce(array_agg(d.workflow_id), '{}') FROM deltas d),
           (SELECT coalesce(array_agg(d.c), '{}') FROM deltas d),
           (SELECT coalesce(array_agg(d.u), '{}') FROM deltas d)
    INTO next_frontier, l_claimable, l_org, l_workflow, l_cancelled, l_unblocked;

    d_org := d_org || l_org;
    d_workflow := d_workflow || l_workflow;
    d_cancelled := d_cancelled || l_cancelled;
    d_unblocked := d_unblocked || l_unblocked;
    claimable := claimable || l_claimable;
    -- The jobs cancelled here that others depend on end in turn, for all their dependents.
    frontier := next_frontier;
    restrict_to := NULL;
  END LOOP;

  IF cardinality(claimable) > 0 THEN
    PERFORM pg_notify('spool_jobs', json_build_object('q', ARRAY(SELECT DISTINCT q FROM unnest(claimable) AS q))::text);
  END IF;

  RETURN QUERY
    SELECT t.o, t.w, sum(t.c)::int, sum(t.u)::int
    FROM unnest(d_org, d_workflow, d_cancelled, d_unblocked) AS t(o, w, c, u)
    GROUP BY t.o, t.w;
END
$$;

-- A job's status as of now, not as of the calling statement's snapshot
-- (volatile: each call reads with a new snapshot). An idempotent enqueue
-- that waited for a concurrent one's key reads that one's job with it
-- (ops/job-insert-many.sql).
CREATE FUNCTION spool.job_status_latest(job_id uuid) RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT j.status FROM spool.jobs j WHERE j.id = job_id
$$;

-- The retry (migration 042) returns rows of the partitioned table.
DROP FUNCTION spool.job_retry(uuid, uuid[], boolean, text, jsonb, integer, integer, spool.queue_name);
CREATE FUNCTION spool.job_retry(org_id uuid, job_ids uuid[], reset_retries boolean, retry_actor text, retry_details jsonb, set_priority integer DEFAULT NULL::integer, set_max_retries integer DEFAULT NULL::integer, set_queue_name spool.queue_name DEFAULT NULL::text)
 RETURNS TABLE(job spool.jobs, from_status text, recount boolean)
 LANGUAGE sql
AS $function$
WITH old AS (
  SELECT j.id, j.status, j.priority, j.max_retries, j.queue_name
  FROM spool.jobs j
  WHERE j.organization_id = org_id AND j.id = ANY (job_ids) AND j.status IN ('failed', 'deadletter', 'cancelled')
),
retried AS (
  UPDATE spool.jobs j
  SET status = 'pending', in_backoff = false,
      retry_count = CASE WHEN reset_retries THEN 0 ELSE j.retry_count + 1 END,
      last_error = NULL,
      scheduled_at = NULL,
      completed_at = NULL,
      result = NULL,
      assigned_worker_id = NULL,
      lease_id = NULL,
      lease_expires_at = NULL,
      cancel_requested_at = NULL,
      priority = coalesce(set_priority, j.priority),
      max_retries = coalesce(set_max_retries, j.max_retries),
      queue_name = coalesce(set_queue_name, j.queue_name),
      updated_at = now()
  FROM old o
  WHERE j.id = o.id
  RETURNING j AS job, j.id, j.organization_id, j.queue_name, j.priority, j.max_retries, j.workflow_id, j.dependents_xid,
            o.status AS from_status, o.priority AS old_priority, o.max_retries AS old_max_retries, o.queue_name AS old_queue_name
),
rewaiting AS (
  SELECT d.job_id, count(*)::int AS n
  FROM retried x
  JOIN spool.job_dependencies d
    ON d.organization_id = x.organization_id AND d.depends_on_job_id = x.id AND d.on_parent_failure <> 'block'
  WHERE x.dependents_xid IS NOT NULL AND d.on_parent_failure = 'continue'
  GROUP BY d.job_id
),
reblocked AS (
  UPDATE spool.jobs j
  SET dependencies_remaining = coalesce(j.dependencies_remaining, 0) + e.n, updated_at = now()
  FROM rewaiting e
  WHERE j.id = e.job_id AND j.organization_id = org_id
    AND j.status IN ('pending', 'scheduled') AND j.dependencies_met = false
),
unlisted AS (
  DELETE FROM spool.dead_letter_queue d USING retried x WHERE d.job_id = x.id
),
edited AS (
  SELECT x.*,
         array_remove(ARRAY[
           CASE WHEN x.priority <> x.old_priority THEN 'priority' END,
           CASE WHEN x.queue_name <> x.old_queue_name THEN 'queue_name' END,
           CASE WHEN x.max_retries <> x.old_max_retries THEN 'max_retries' END
         ], NULL) AS fields
  FROM retried x
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, actor, details)
  SELECT e.organization_id, e.id, e.queue_name, 'retry', e.from_status, 'pending', retry_actor,
         retry_details
         || CASE WHEN cardinality(e.fields) = 0 THEN '{}'::jsonb ELSE jsonb_build_object(
              'fields', to_jsonb(e.fields),
              'from', jsonb_strip_nulls(jsonb_build_object(
                'priority', CASE WHEN 'priority' = ANY (e.fields) THEN e.old_priority END,
                'queue_name', CASE WHEN 'queue_name' = ANY (e.fields) THEN e.old_queue_name END,
                'max_retries', CASE WHEN 'max_retries' = ANY (e.fields) THEN e.old_max_retries END)),
              'to', jsonb_strip_nulls(jsonb_build_object(
                'priority', CASE WHEN 'priority' = ANY (e.fields) THEN e.priority END,
                'queue_name', CASE WHEN 'queue_name' = ANY (e.fields) THEN e.queue_name END,
                'max_retries', CASE WHEN 'max_retries' = ANY (e.fields) THEN e.max_retries END))) END
  FROM edited e
),
-- A retried workflow job no longer counts as failed; a failed workflow runs
-- again (its status follows the counters, migration 011).
workflow_delta AS (
  SELECT workflow_id,
         count(*) FILTER (WHERE from_status IN ('failed', 'deadletter'))::int AS failed,
         count(*) FILTER (WHERE from_status = 'cancelled')::int AS cancelled
  FROM retried
  WHERE workflow_id IS NOT NULL
  GROUP BY workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET failed_jobs = greatest(w.failed_jobs - d.failed, 0),
      cancelled_jobs = greatest(w.cancelled_jobs - d.cancelled, 0),
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = org_id AND w.id = d.workflow_id
)
SELECT x.job, x.from_status,
       x.dependents_xid IS NOT NULL AND NOT pg_visible_in_snapshot(x.dependents_xid, pg_current_snapshot()) AS recount
FROM retried x
-- Evaluated once, at the first row: none when nothing moved.
WHERE (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
         FROM retried HAVING count(*) > 0) IS NOT NULL
$function$;
