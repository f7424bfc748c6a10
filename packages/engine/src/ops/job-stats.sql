-- Job counts of an organization by status (index-only over jobs_org_queue_status_idx).
SELECT status, count(*)::int AS n
FROM spool.jobs
WHERE organization_id = $1
GROUP BY status;
