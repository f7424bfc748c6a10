-- Admin reset-usage: today's job counter back to zero.
UPDATE spool.organizations
SET jobs_today = 0, jobs_today_date = (now() AT TIME ZONE 'UTC')::date
WHERE id = $1
RETURNING id;
