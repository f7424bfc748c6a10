-- Processing rows leave the two listing indexes (docs/performance.md,
-- "Processing rows off the listing indexes").
--
-- A claim is a non-HOT update (status changes, and status is in index keys
-- and predicates), so its new row version gets an entry in every index whose
-- predicate it matches: jobs_pkey, jobs_org_queue_status_idx,
-- jobs_org_created_idx and jobs_worker_idx. A processing row lives for one
-- attempt; the listing indexes exist for the rows that stay (waiting and
-- finished ones). With both made partial on status <> 'processing', a claim
-- writes two index entries instead of four, and the one index that holds
-- processing rows, now keyed by queue as well, serves what read them from
-- the listing indexes (a queue's running count for concurrency_limit, stats)
-- as well as the lease reaper and a worker's release.
--
-- Readers of the listing indexes spell `status <> 'processing'` in the
-- statement's text (so generic plans of prepared statements can use the
-- partial index) and read processing rows through jobs_processing_idx in a
-- second branch; packages/engine/test/listing-index-plans.test.ts checks
-- each of them on a table where the wrong plan would show.
CREATE INDEX jobs_processing_idx ON spool.jobs (organization_id, queue_name, assigned_worker_id) WHERE status = 'processing';
DROP INDEX spool.jobs_worker_idx;

DROP INDEX spool.jobs_org_queue_status_idx;
CREATE INDEX jobs_org_queue_status_idx ON spool.jobs (organization_id, queue_name, status, created_at DESC) WHERE status <> 'processing';

DROP INDEX spool.jobs_org_created_idx;
CREATE INDEX jobs_org_created_idx ON spool.jobs (organization_id, created_at DESC) WHERE status <> 'processing';
