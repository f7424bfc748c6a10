-- Workers of an organization, most recent heartbeat first.
SELECT * FROM spool.workers WHERE organization_id = $1 ORDER BY last_heartbeat DESC, id LIMIT $2;
