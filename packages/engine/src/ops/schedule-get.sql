-- One schedule of an organization; FOR UPDATE variant lives in schedule-lock.sql.
SELECT * FROM spool.schedules WHERE organization_id = $1 AND id = $2;
