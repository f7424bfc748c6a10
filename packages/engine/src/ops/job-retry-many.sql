-- Puts failed or dead-lettered jobs back to pending, claimable now. Used by
-- the manual retry ($5 = false: retry_count + 1, docs/compatibility.md §3.3) and by the
-- DLQ retry ($5 = true: retry_count reset to 0, docs/compatibility.md §3.6). Selection:
-- the given ids ($2), else the oldest $4 of queue $3, else of the organization;
-- always only of the caller's queues ($7: LIKE patterns, NULL = all).
-- $8: who asked (job_history.actor, migration 031), NULL when unknown.
-- The move itself (dependents' continue edges, the dead-letter entry,
-- history, workflows, the wake-up) is spool.job_retry (migration 042), as a
-- DLQ replay's batch makes it. `recount` flags a retried job whose
-- dependents the caller recounts afterwards (see the function).
WITH target AS (
  SELECT id
  FROM spool.jobs
  WHERE organization_id = $1
    AND status = ANY($6::text[])
    AND ($2::uuid[] IS NULL OR id = ANY($2::uuid[]))
    AND ($3::text IS NULL OR queue_name = $3::text)
    AND ($7::text[] IS NULL OR queue_name LIKE ANY ($7::text[]))
  ORDER BY created_at ASC, id ASC
  LIMIT $4
  FOR UPDATE SKIP LOCKED
)
SELECT (r.job).*, r.from_status, r.recount
FROM spool.job_retry($1, ARRAY(SELECT id FROM target), $5::boolean, $8::text, NULL) r;
