-- Job counts of an organization by status, of the caller's queues ($2: LIKE
-- patterns, NULL = all): index-only over jobs_org_queue_status_idx, and the
-- processing jobs, which that index does not hold (migration 043), over
-- jobs_processing_idx.
SELECT status, count(*)::int AS n
FROM spool.jobs
WHERE organization_id = $1 AND status <> 'processing'
  AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
GROUP BY status
UNION ALL
SELECT 'processing', count(*)::int
FROM spool.jobs
WHERE organization_id = $1 AND status = 'processing'
  AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
HAVING count(*) > 0;
