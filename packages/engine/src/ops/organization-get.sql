-- One organization by id.
SELECT * FROM spool.organizations WHERE id = $1;
