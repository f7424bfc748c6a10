-- Every job an organization holds, finished ones included (admin detail).
SELECT count(*) AS total FROM spool.jobs WHERE organization_id = $1;
