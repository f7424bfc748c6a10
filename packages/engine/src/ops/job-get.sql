-- One job of an organization.
SELECT * FROM spool.jobs WHERE organization_id = $1 AND id = $2;
