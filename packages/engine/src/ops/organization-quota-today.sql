-- Today's job counter, read in a statement of its own: after a refused
-- reservation this snapshot includes the concurrent reservations the
-- refusal waited for (the reserving statement's own snapshot predates them).
SELECT CASE WHEN jobs_today_date = (now() AT TIME ZONE 'UTC')::date THEN jobs_today ELSE 0 END AS today
FROM spool.organizations
WHERE id = $1;
