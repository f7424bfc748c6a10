-- Whether spool.jobs_live has column statistics, and whether it holds any
-- job (job-statistics.ts). pg_stats shows the columns this role may read;
-- the role that migrated the schema owns the table and reads them all. An
-- ANALYZE of an empty table stores no statistics, so a table analyzed
-- before its first job still answers false.
SELECT EXISTS (SELECT 1 FROM pg_stats WHERE schemaname = 'spool' AND tablename = 'jobs_live') AS has_statistics,
       EXISTS (SELECT 1 FROM spool.jobs_live) AS has_jobs;
