-- Every job an organization holds, finished ones included (admin detail).
-- Processing jobs are not in jobs_org_created_idx (migration 043).
SELECT (SELECT count(*) FROM spool.jobs WHERE organization_id = $1 AND status <> 'processing')
     + (SELECT count(*) FROM spool.jobs WHERE organization_id = $1 AND status = 'processing') AS total;
