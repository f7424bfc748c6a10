-- A workflow's status and completed_at follow from its counters, derived in
-- one place: this trigger. Before it, each of the eight statements that move
-- a workflow job (ops/job-*-many.sql, job-expire, job-rescue-expired,
-- job-release-worker, job-dependencies-recount) spelled the derivation out
-- and called spool.workflow_status twice per row (once for status, once
-- again for completed_at); now they only write the counters, and the status
-- is computed once per row.
--
-- UPDATE OF the counters: the trigger fires for exactly the statements that
-- name a counter in their SET, as the derivation ran before; an UPDATE that
-- touches no counter (ops/workflow-mark-cancelled.sql) pays nothing and its
-- explicit status stands. The derivation reads NEW.status, so an explicit
-- 'cancelled' is kept by spool.workflow_status even when counters move later.
--
-- "started" is NEW.started_at IS NOT NULL: the statements that passed `true`
-- set started_at = coalesce(started_at, now()) in the same UPDATE (the
-- retry, which did not, only moves failed jobs, whose failure already set
-- started_at), and the others passed started_at IS NOT NULL themselves.
--
-- An INSERT (ops/workflow-create.sql) does not fire it: a new workflow is
-- 'pending' with nothing finished.
CREATE FUNCTION spool.workflow_derive_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.status := spool.workflow_status(NEW.status, NEW.started_at IS NOT NULL, NEW.total_jobs, NEW.completed_jobs,
                                      NEW.failed_jobs, NEW.cancelled_jobs, NEW.blocked_jobs);
  NEW.completed_at := CASE WHEN NEW.status IN ('completed', 'failed', 'cancelled') THEN coalesce(OLD.completed_at, now()) END;
  RETURN NEW;
END
$$;

CREATE TRIGGER workflows_derive_status
  BEFORE UPDATE OF total_jobs, completed_jobs, failed_jobs, cancelled_jobs, blocked_jobs ON spool.workflows
  FOR EACH ROW EXECUTE FUNCTION spool.workflow_derive_status();
