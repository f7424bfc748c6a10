-- One worker of an organization.
SELECT * FROM spool.workers WHERE organization_id = $1 AND id = $2;
