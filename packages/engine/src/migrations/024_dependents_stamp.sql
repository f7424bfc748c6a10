-- A job that others depend on carries dependents_xid (migration 006) from
-- the moment it has a dependent, whatever its status: workflow-create.sql
-- stamps the jobs its edges point to, job-dependencies-insert.sql every
-- dependency it adds. A completion then probes job_dependencies only for
-- stamped jobs (job-complete-many.sql), instead of for every job (about 2
-- of a completion's ~20 buffer reads, docs/performance.md). Until now only
-- a processing job gaining a dependent was stamped; the jobs that already
-- have dependents are stamped here, with this transaction's id, which every
-- later completion sees (so none of them recounts for it).
UPDATE spool.jobs j
SET dependents_xid = pg_current_xact_id()
WHERE j.dependents_xid IS NULL
  AND j.status <> 'completed'
  AND EXISTS (SELECT 1 FROM spool.job_dependencies d WHERE d.organization_id = j.organization_id AND d.depends_on_job_id = j.id);
