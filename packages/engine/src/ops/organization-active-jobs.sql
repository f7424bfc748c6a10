-- Active jobs of an organization, counted up to $2: the plan check only needs
-- to know whether the limit is reached, so the scan stops there.
SELECT count(*) AS active
FROM (SELECT 1 FROM spool.jobs
      WHERE organization_id = $1 AND status IN ('pending', 'scheduled', 'processing')
      LIMIT $2) AS a;
