-- Finished jobs in time partitions that retention drops whole
-- (docs/performance.md, "Finished jobs in time partitions").
--
-- spool.jobs_done (completed and cancelled jobs, migration 046) becomes a
-- table partitioned by RANGE on `purge_on`: the UTC day on which the job's
-- retention window ends, decided when the job finishes from the same rules
-- as before (the queue's settings.retention.<status>_days, else the default
-- for the status, now kept in spool.retention_defaults). One partition per
-- day, spool.jobs_done_YYYYMMDD. Retention drops a day's partition once the
-- day is over, so every job in it is past its window; a job is kept at
-- most one day longer than its window. Queues with different windows share
-- the days they purge on, so the number of partitions is about the longest
-- window in days, whatever the number of queues or windows.
--
-- Partitions are made ahead (spool.jobs_done_partitions_premake, run by the
-- retention service every minute, for jobs finishing in the next two days).
-- A job whose day has no partition yet (a queue's window changed a moment
-- ago) lands in spool.jobs_done_default; making that day's partition moves
-- it out. purge_on is a column the finishing statements set; live jobs keep
-- the default 'infinity', which jobs_done refuses, so a finishing statement
-- that forgets it fails instead of keeping a job forever.

-- 1. The defaults, in the database: the finishing statements read them.
CREATE TABLE spool.retention_defaults (
  status text PRIMARY KEY CHECK (status IN ('completed', 'cancelled', 'failed', 'deadletter')),
  days float8 NOT NULL CHECK (days >= 0)
);
INSERT INTO spool.retention_defaults (status, days) VALUES ('completed', 7), ('cancelled', 7), ('failed', 30), ('deadletter', 30);

-- A queue's override of the window for a status (a number of days, fractions
-- allowed; anything else is no override), as retention has always read it.
CREATE FUNCTION spool.retention_override_days(settings jsonb, final_status text) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(settings -> 'retention' -> (final_status || '_days')) = 'number'
              THEN (settings -> 'retention' ->> (final_status || '_days'))::float8 END
$$;

-- The day a window of `days` that starts at `at` ends on (UTC). Windows are
-- capped at 100 years so that no setting overflows an interval.
CREATE FUNCTION spool.retention_purge_day(at timestamptz, days float8) RETURNS date LANGUAGE sql IMMUTABLE AS $$
  SELECT ((at + make_interval(secs => 86400 * least(greatest(coalesce(days, 0), 0), 36500))) AT TIME ZONE 'UTC')::date
$$;

-- The purge day of a job of `queue` that finishes as `final_status` at
-- `finished_at` (now, for the statements that finish jobs).
CREATE FUNCTION spool.job_purge_on(org uuid, queue text, final_status text, finished_at timestamptz DEFAULT now()) RETURNS date LANGUAGE sql STABLE AS $$
  SELECT spool.retention_purge_day(finished_at, coalesce(
    (SELECT spool.retention_override_days(qc.settings, final_status) FROM spool.queue_config qc
      WHERE qc.organization_id = org AND qc.queue_name = queue),
    (SELECT d.days FROM spool.retention_defaults d WHERE d.status = final_status)))
$$;

-- 2. The new layout. The primary key must hold every partition key.
ALTER TABLE spool.jobs DROP CONSTRAINT jobs_pkey;
ALTER TABLE spool.jobs ADD COLUMN purge_on date NOT NULL DEFAULT 'infinity';
ALTER TABLE spool.jobs DETACH PARTITION spool.jobs_done;
ALTER TABLE spool.jobs_done RENAME TO jobs_done_046;
CREATE TABLE spool.jobs_done PARTITION OF spool.jobs FOR VALUES IN ('done') PARTITION BY RANGE (purge_on);
ALTER TABLE spool.jobs_done
  ADD CONSTRAINT jobs_done_final CHECK (status IN ('completed', 'cancelled')),
  ADD CONSTRAINT jobs_done_not_in_backoff CHECK (NOT in_backoff),
  ADD CONSTRAINT jobs_done_purge_on_set CHECK (purge_on < 'infinity');
CREATE TABLE spool.jobs_done_default PARTITION OF spool.jobs_done DEFAULT;

-- 3. Making a day's partition. Serialized by an advisory lock, so replicas
-- that premake at the same time make each partition once. Rows of that day
-- in the default partition move into it first (a partition cannot be made
-- while the default holds rows of its range). Locks are taken parent first,
-- as every statement on spool.jobs takes them: jobs_done, then the default
-- partition. A caller must not hold a lock on a partition of jobs_done
-- already (it would wait for jobs_done while holding its child: a deadlock
-- with any reader of finished jobs).
CREATE FUNCTION spool.jobs_done_partition_ensure(day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  name text := 'jobs_done_' || to_char(day, 'YYYYMMDD');
BEGIN
  IF to_regclass(format('spool.%I', name)) IS NOT NULL THEN
    RETURN false;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('spool.jobs_done partitions'));
  -- Read from the catalog, not its cache: a replica may have made it while
  -- this one waited for the lock.
  IF EXISTS (SELECT 1 FROM pg_class c WHERE c.relname = name AND c.relnamespace = 'spool'::regnamespace) THEN
    RETURN false;
  END IF;
  LOCK TABLE ONLY spool.jobs_done IN ACCESS EXCLUSIVE MODE;
  IF EXISTS (SELECT 1 FROM spool.jobs_done_default WHERE purge_on = day) THEN
    EXECUTE format('CREATE TABLE spool.%I (LIKE spool.jobs_done INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)', name);
    EXECUTE format('WITH moved AS (DELETE FROM spool.jobs_done_default WHERE purge_on = %L RETURNING *) INSERT INTO spool.%I SELECT * FROM moved', day, name);
    EXECUTE format('ALTER TABLE spool.jobs_done ATTACH PARTITION spool.%I FOR VALUES FROM (%L) TO (%L)', name, day, day + 1);
  ELSE
    EXECUTE format('CREATE TABLE spool.%I PARTITION OF spool.jobs_done FOR VALUES FROM (%L) TO (%L)', name, day, day + 1);
  END IF;
  RETURN true;
END
$$;

-- The partitions that jobs finishing in the next two days purge on: for
-- each window in use (the defaults and every queue's override), the days
-- from now + window to now + 2 days + window.
CREATE FUNCTION spool.jobs_done_partitions_premake() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  day date;
  made integer := 0;
BEGIN
  FOR day IN
    WITH windows AS (
      SELECT d.days FROM spool.retention_defaults d WHERE d.status IN ('completed', 'cancelled')
      UNION
      SELECT spool.retention_override_days(qc.settings, s.status)
      FROM spool.queue_config qc CROSS JOIN unnest(ARRAY['completed', 'cancelled']) AS s(status)
      WHERE spool.retention_override_days(qc.settings, s.status) IS NOT NULL
    )
    SELECT DISTINCT spool.retention_purge_day(now() + make_interval(days => ahead), w.days)
    FROM windows w CROSS JOIN generate_series(0, 2) AS ahead
    ORDER BY 1
  LOOP
    IF spool.jobs_done_partition_ensure(day) THEN
      made := made + 1;
    END IF;
  END LOOP;
  RETURN made;
END
$$;

-- Retention of a day (two steps, each its own transaction, so that no
-- transaction holds a partition while it waits for jobs_done, which would
-- deadlock with any reader of finished jobs):
-- 1. spool.jobs_done_partition_forget(before): the oldest day's partition
--    whose day ended before `before` (the caller passes the current UTC
--    date): deletes what belongs to its jobs in other tables (as the
--    row-by-row retention deletes them) and returns its name, how many jobs
--    it holds and how many history rows went; no row when none is due.
-- 2. spool.jobs_done_partition_drop(name): drops it (PostgreSQL locks
--    jobs_done before the partition).
-- Nothing new lands in a past day: a job that finishes now ends its window
-- today or later. Rows of past days in the default partition get their own
-- partition first (spool.jobs_done_partition_ensure, called by the caller for
-- each day of spool.jobs_done_default it finds), so they go the same way.
CREATE FUNCTION spool.jobs_done_partition_forget(before date) RETURNS TABLE (partition_name text, jobs bigint, history bigint) LANGUAGE plpgsql AS $$
DECLARE
  name text;
BEGIN
  SELECT c.relname INTO name
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  WHERE i.inhparent = 'spool.jobs_done'::regclass AND c.relname ~ '^jobs_done_[0-9]{8}$'
    AND to_date(substr(c.relname, 11), 'YYYYMMDD') < before
  ORDER BY c.relname
  LIMIT 1;
  IF name IS NULL THEN
    RETURN;
  END IF;
  EXECUTE format('DELETE FROM spool.job_idempotency_keys k USING spool.%I j WHERE k.organization_id = j.organization_id AND k.idempotency_key = j.idempotency_key AND k.job_id = j.id', name);
  EXECUTE format('DELETE FROM spool.dead_letter_queue q USING spool.%I j WHERE q.job_id = j.id', name);
  EXECUTE format('DELETE FROM spool.job_history h USING spool.%I j WHERE h.organization_id = j.organization_id AND h.job_id = j.id', name);
  GET DIAGNOSTICS history = ROW_COUNT;
  EXECUTE format('DELETE FROM spool.job_progress p USING spool.%I j WHERE p.organization_id = j.organization_id AND p.job_id = j.id', name);
  EXECUTE format('DELETE FROM spool.job_logs g USING spool.%I j WHERE g.organization_id = j.organization_id AND g.job_id = j.id', name);
  EXECUTE format('DELETE FROM spool.job_key_answers a USING spool.%I j WHERE a.organization_id = j.organization_id AND a.job_id = j.id', name);
  EXECUTE format('SELECT count(*) FROM spool.%I', name) INTO jobs;
  partition_name := name;
  RETURN NEXT;
END
$$;

CREATE FUNCTION spool.jobs_done_partition_drop(name text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF name !~ '^jobs_done_[0-9]{8}$' THEN
    RAISE EXCEPTION 'not a day partition of spool.jobs_done: %', name;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('spool.jobs_done partitions'));
  IF NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.relname = name AND c.relnamespace = 'spool'::regnamespace) THEN
    RETURN false;
  END IF;
  EXECUTE format('DROP TABLE spool.%I', name);
  RETURN true;
END
$$;

-- 4. The finished rows of the old layout, each with the day its window ends
-- (from when it finished), into partitions made for those days.
UPDATE spool.jobs_done_046 o
SET purge_on = spool.job_purge_on(o.organization_id, o.queue_name, o.status, coalesce(o.completed_at, o.updated_at, o.created_at));
SELECT spool.jobs_done_partition_ensure(day) FROM (SELECT DISTINCT purge_on AS day FROM spool.jobs_done_046) d;
SELECT spool.jobs_done_partitions_premake();
INSERT INTO spool.jobs_done SELECT * FROM spool.jobs_done_046;
DROP TABLE spool.jobs_done_046;

-- 5. Keys and the reads of finished jobs, as migration 046 had them.
ALTER TABLE spool.jobs ADD CONSTRAINT jobs_pkey PRIMARY KEY (id, phase, purge_on);
CREATE INDEX jobs_done_org_created_idx ON spool.jobs_done (organization_id, created_at DESC);
CREATE INDEX jobs_done_org_queue_status_idx ON spool.jobs_done (organization_id, queue_name, status, created_at DESC);
CREATE INDEX jobs_done_workflow_idx ON spool.jobs_done (organization_id, workflow_id) WHERE workflow_id IS NOT NULL;
CREATE INDEX jobs_done_job_key_created_idx ON spool.jobs_done (organization_id, queue_name, job_key, created_at DESC)
  WHERE job_key IS NOT NULL;
CREATE INDEX jobs_done_completion_webhook_idx ON spool.jobs_done (organization_id, id) WHERE completion_webhook IS NOT NULL;

-- 6. The state machine's trigger on jobs_done, regenerated on the new table
-- (a BEFORE trigger on a partitioned table is cloned to each partition).
UPDATE spool.job_transitions SET to_status = to_status WHERE false;

-- 7. Dependents cancelled by a parent's failure (migration 046) get their purge day.
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
      SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(j.organization_id, j.queue_name, 'cancelled'),
          in_backoff = false, completed_at = now(), updated_at = now(),
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
