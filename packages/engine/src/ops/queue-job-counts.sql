-- Jobs of one queue by status, and the age of its oldest pending job.
-- Served by jobs_org_queue_status_idx (organization_id, queue_name, status,
-- created_at DESC), and for the processing jobs, which it does not hold
-- (migration 043), by jobs_processing_idx.
SELECT status,
       count(*)::bigint AS count,
       CASE WHEN status = 'pending'
            THEN greatest(0, (extract(epoch FROM now() - min(created_at)) * 1000))::bigint
       END AS oldest_age_ms
FROM spool.jobs
WHERE organization_id = $1 AND queue_name = $2 AND status <> 'processing'
GROUP BY status
UNION ALL
SELECT 'processing', count(*)::bigint, NULL::bigint
FROM spool.jobs
WHERE organization_id = $1 AND queue_name = $2 AND status = 'processing'
HAVING count(*) > 0;
