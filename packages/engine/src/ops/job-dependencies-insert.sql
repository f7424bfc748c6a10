-- Adds edges "$2 depends on each of $3" (existing edges are kept), sets the
-- dependent's mode when $5 is given, and stamps each dependency with this
-- transaction's id (migration 024): a completion looks for dependents only
-- of a stamped job, and one that started before this commits cannot see the
-- new edge, sees the stamp instead, and recounts. (A failure of the
-- dependency waits on this transaction's row lock and settles the new edge's
-- $6 on_parent_failure, migration 035, from a snapshot that sees it.)
WITH added AS (
  INSERT INTO spool.job_dependencies (organization_id, job_id, depends_on_job_id, dependency_type, on_parent_failure)
  SELECT $1, $2, dep, $4, $6 FROM unnest($3::uuid[]) AS dep
  ON CONFLICT DO NOTHING
  RETURNING depends_on_job_id
),
stamped AS (
  UPDATE spool.jobs
  SET dependents_xid = pg_current_xact_id()
  WHERE organization_id = $1 AND id IN (SELECT depends_on_job_id FROM added)
),
moded AS (
  UPDATE spool.jobs
  SET dependency_mode = coalesce($5, dependency_mode, 'all'), updated_at = now()
  WHERE organization_id = $1 AND id = $2
)
SELECT depends_on_job_id FROM added;
