-- Gives back reserved quota that was not used (idempotent repeats, failed
-- inserts). Only today's counter is touched.
UPDATE spool.organizations
SET jobs_today = greatest(jobs_today - $2, 0)
WHERE id = $1 AND jobs_today_date = (now() AT TIME ZONE 'UTC')::date;
