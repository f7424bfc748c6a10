-- The job state machine, enforced by the database. Before this, the CHECK
-- constraints of migration 001 only knew which statuses exist, and each
-- ops/*.sql decided by itself which moves it makes; a wrong WHERE (or a hand
-- edit) could take a completed job back to processing unnoticed.
--
-- spool.job_transitions lists every allowed change of spool.jobs.status; a
-- NULL from_status is a status a new job may start in. It holds the same
-- rows as JOB_MOVES in packages/protocol/src/job-status.ts (a test keeps the
-- two equal; docs/state-machine.md draws them).
--
-- The rows are not read per job: the two triggers on spool.jobs are
-- generated from them, with the allowed moves spelled out as constants in
-- the triggers' WHEN. A WHEN that queried this table would run a lookup for
-- every row a claim or a completion moves; a constant list costs a few text
-- comparisons per row, and the trigger function itself runs only for a
-- refused move, to raise the error. Changing the table (in a later
-- migration) regenerates the triggers in the same statement, so the rows
-- and the enforcement cannot drift apart.
--
-- AFTER, not BEFORE: PostgreSQL fetches the old row of a BEFORE UPDATE row
-- trigger by locking it, which adds a heap LOCK record per row to every
-- UPDATE of spool.jobs (heartbeats included) that does not lock its rows
-- already; an AFTER trigger reads the old version without a lock. The
-- refusal is the same: the error aborts the statement at its end
-- (docs/performance.md, "The state machine in the database").
--
-- The refusal uses its own SQLSTATE, SP001, not check_violation: only a bug
-- in Spool (or a hand-written UPDATE) makes a wrong move, so the API must
-- answer 500 and log it, not 400 as for a client's out-of-range value.
CREATE TABLE spool.job_transitions (
  from_status text CHECK (from_status IN ('pending', 'scheduled', 'processing', 'completed', 'failed', 'deadletter', 'cancelled')),
  to_status   text NOT NULL CHECK (to_status IN ('pending', 'scheduled', 'processing', 'completed', 'failed', 'deadletter', 'cancelled')),
  CONSTRAINT job_transitions_move CHECK (from_status IS DISTINCT FROM to_status)
);
-- (Not UNIQUE NULLS NOT DISTINCT: that needs PostgreSQL 15.)
CREATE UNIQUE INDEX job_transitions_once ON spool.job_transitions (coalesce(from_status, ''), to_status);

CREATE FUNCTION spool.job_refuse_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    RAISE EXCEPTION USING ERRCODE = 'SP001', TABLE = 'jobs', SCHEMA = 'spool', COLUMN = 'status',
      MESSAGE = format('job state machine: a new job cannot start as %s (job %s; allowed starts are the rows of spool.job_transitions with no from_status)', NEW.status, NEW.id);
  END IF;
  RAISE EXCEPTION USING ERRCODE = 'SP001', TABLE = 'jobs', SCHEMA = 'spool', COLUMN = 'status',
    MESSAGE = format('job state machine: job %s cannot move from %s to %s (not a row of spool.job_transitions)', NEW.id, OLD.status, NEW.status);
END
$$;

-- Regenerates the triggers of spool.jobs from the table's rows. With no
-- allowed start (or move) left, every insert (or change of status) is refused.
CREATE FUNCTION spool.job_transitions_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  starts text;
  moves text;
BEGIN
  SELECT string_agg(format('%L', to_status), ', ' ORDER BY to_status) INTO starts
  FROM spool.job_transitions WHERE from_status IS NULL;
  SELECT string_agg(format('(%L, %L)', from_status, to_status), ', ' ORDER BY from_status, to_status) INTO moves
  FROM spool.job_transitions WHERE from_status IS NOT NULL;

  DROP TRIGGER IF EXISTS jobs_status_start ON spool.jobs;
  DROP TRIGGER IF EXISTS jobs_status_move ON spool.jobs;
  EXECUTE format('CREATE TRIGGER jobs_status_start AFTER INSERT ON spool.jobs FOR EACH ROW WHEN (%s) '
                 'EXECUTE FUNCTION spool.job_refuse_status()',
                 CASE WHEN starts IS NULL THEN 'true' ELSE format('NEW.status NOT IN (%s)', starts) END);
  -- The move list first: for a legal move it is false at the move's own row.
  EXECUTE format('CREATE TRIGGER jobs_status_move AFTER UPDATE OF status ON spool.jobs FOR EACH ROW WHEN (%s) '
                 'EXECUTE FUNCTION spool.job_refuse_status()',
                 CASE WHEN moves IS NULL THEN 'OLD.status <> NEW.status'
                      ELSE format('(OLD.status, NEW.status) NOT IN (%s) AND OLD.status <> NEW.status', moves) END);
  RETURN NULL;
END
$$;

CREATE TRIGGER job_transitions_apply
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON spool.job_transitions
  FOR EACH STATEMENT EXECUTE FUNCTION spool.job_transitions_apply();

-- Every move some operation makes (ops/*.sql), and nothing else. No move
-- leads to failed: a failure with no retry left dead-letters the job; failed
-- is a status of the API contract, and the retry still accepts it.
INSERT INTO spool.job_transitions (from_status, to_status) VALUES
  (NULL, 'pending'),               -- create (job-insert-many, workflow-create)
  (NULL, 'scheduled'),             -- create with scheduled_at in the future
  ('scheduled', 'pending'),        -- promote
  ('pending', 'processing'),       -- claim
  ('processing', 'completed'),     -- complete
  ('processing', 'pending'),       -- fail with retries left, lease expired, worker released
  ('processing', 'deadletter'),    -- fail with none left or not retryable, lease expired with none left
  ('processing', 'cancelled'),     -- fail, lease expiry or release after a cancel request
  ('pending', 'cancelled'),        -- cancel, expire
  ('scheduled', 'cancelled'),      -- cancel, expire
  ('failed', 'pending'),           -- retry
  ('deadletter', 'pending');       -- retry, DLQ replay
