-- Locks one schedule for a read-modify-write (update, pause, resume, trigger):
-- the firer's SKIP LOCKED then leaves it alone until the change commits.
SELECT * FROM spool.schedules WHERE organization_id = $1 AND id = $2 FOR UPDATE;
