-- Cheaper job transitions (docs/performance.md, "Per-job database cost").
-- A status change can never be a HOT update (status is in the predicate of
-- the partial indexes), so every claim and completion writes one entry into
-- each index of spool.jobs whose predicate the new row version matches.
-- Two of those indexes served only background sweeps that can use another
-- index at no per-job cost:

-- jobs_lease_expiry_idx (lease_expires_at) WHERE processing: one entry per
-- claim, and, because lease_expires_at was indexed, every heartbeat was a
-- non-HOT update writing into all indexes. The lease reaper
-- (ops/job-rescue-expired.sql) now reads the processing rows through
-- jobs_worker_idx, which holds exactly those rows (few: bounded by the
-- workers' concurrency), and sorts them; a heartbeat changes no indexed
-- column and can be a HOT update.
DROP INDEX spool.jobs_lease_expiry_idx;

-- jobs_finished_idx (organization_id, queue_name, status, completed_at)
-- WHERE completed_at IS NOT NULL: one entry per finished job, written only
-- for retention. Retention (ops/job-retention-delete.sql) now walks
-- jobs_org_queue_status_idx, whose created_at order bounds the scan just as
-- well (a job finished before the cutoff was created before it).
DROP INDEX spool.jobs_finished_idx;

-- Room on each heap page for the row versions a job's claim and completion
-- write: a non-HOT update still goes to the same page when it has space,
-- which dirties one page instead of two, lets the WAL record carry only the
-- changed bytes, and spares the extra lock record PostgreSQL logs on the old
-- version when the new one must go to another page. Measured (bench/cost.ts):
-- 70 saves ~3% of a drain's WAL against 100; 50 saved only ~1.5% more, for
-- twice the pages per freshly inserted job. Applies to pages written from now
-- on; existing rows keep their pages.
ALTER TABLE spool.jobs SET (fillfactor = 70);
