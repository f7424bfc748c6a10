-- Active jobs of an organization, counted up to $2: the plan check only needs
-- to know whether the limit is reached, so the scan stops there. Processing
-- jobs are not in the listing indexes (migration 043): their own branch.
SELECT count(*) AS active
FROM ((SELECT 1 FROM spool.jobs
       WHERE organization_id = $1 AND status IN ('pending', 'scheduled') AND status <> 'processing')
      UNION ALL
      (SELECT 1 FROM spool.jobs WHERE organization_id = $1 AND status = 'processing')
      LIMIT $2) AS a;
