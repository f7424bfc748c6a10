-- What a parent's final failure does to its dependents (docs/workflows.md,
-- "When a parent fails"). Until now a dependent of a job that ended
-- dead-lettered, failed or cancelled stayed blocked until someone cancelled
-- it or retried the parent. Each edge now says, in on_parent_failure:
--  * block    (the default: what every existing edge did) the dependent waits;
--             a retry of the parent that then completes releases it;
--  * cancel   the dependent is cancelled, in the statement that ends the
--             parent, and its own dependents follow their edges in turn;
--  * continue the edge counts as satisfied: the dependent runs once all its
--             edges are (GET /jobs/{id}/dependencies/results shows it how the
--             parent ended).
-- A constant default: adding the column rewrites nothing (the CHECK reads
-- the table once).
ALTER TABLE spool.job_dependencies
  ADD COLUMN on_parent_failure text NOT NULL DEFAULT 'block' CHECK (on_parent_failure IN ('block', 'cancel', 'continue'));

-- serves: spool.job_dependents_settle's lookup of the cancel and continue
-- edges of a parent that ended unsuccessfully, and job-retry-many.sql's of
-- its continue edges. Block edges, the default, are not in it: a failed
-- parent whose dependents only block pays one probe of a small index and no
-- heap read. (Completions still find every edge through
-- job_dependencies_parent_idx.)
CREATE INDEX job_dependencies_acting_idx ON spool.job_dependencies (organization_id, depends_on_job_id)
  WHERE on_parent_failure <> 'block';

-- The dependents of jobs that have just ended without success, settled by
-- their edges' on_parent_failure. Called from the statements that end jobs
-- (job-fail-many, job-rescue-expired, job-cancel-many, job-snooze,
-- job-release-worker, job-expire) with the ended jobs that carry a
-- dependents stamp (migration 024), once per statement, and never when
-- there are none: a job nothing depends on pays nothing.
--
-- A function, not more CTEs in each of six statements: the cascade is
-- transitive (a cancelled dependent's own dependents follow their edges),
-- and each level must start from the jobs the level before really
-- cancelled. A recursive CTE walks a snapshot and cannot re-check the rows
-- it writes; here each level is one UPDATE whose rows are locked and
-- re-checked (still pending or scheduled, still blocked), and the next level
-- starts from its RETURNING. A dependent that another parent released in the
-- meantime (mode any) is left alone, and so are its dependents.
--
-- PL/pgSQL, so VOLATILE: each statement in it takes a fresh snapshot that
-- sees the calling statement's own changes (the parents' new status) and
-- every edge committed before, including one added by a transaction the
-- caller waited for on the parent's row lock (job-dependencies-insert.sql):
-- no recount is needed afterwards for edges added while the parent ended.
--
-- It changes dependents' rows and writes their history, and leaves the
-- workflows to the caller: it returns each touched workflow's deltas
-- (cancelled jobs, jobs no longer blocked), which the caller adds in its own
-- UPDATE of spool.workflows; the row with a null workflow_id counts the
-- jobs of no workflow (callers' joins to spool.workflows skip it). (An UPDATE here of a workflow row the calling
-- statement also updates would make that statement fail: a row may not be
-- changed by a function's command and then by the calling command.) It
-- sends one pg_notify for dependents that became claimable.
--
-- `among` (NULL: every dependent) limits the first level to those jobs: a
-- dependency added with `cancel` to a job that has already failed cancels
-- that one dependent, not the parent's earlier ones (job-dependencies.ts).
--
-- A blocked dependent with a cancel edge is cancelled even in mode any:
-- `cancel` says that this parent's failure ends it. Cancelled by this, it
-- stays cancelled when the parent is retried.
CREATE FUNCTION spool.job_dependents_settle(ended uuid[], among uuid[] DEFAULT NULL)
RETURNS TABLE (organization_id uuid, workflow_id uuid, cancelled integer, unblocked integer)
LANGUAGE plpgsql AS $$
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
      SET status = 'cancelled', in_backoff = false, completed_at = now(), updated_at = now(),
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
