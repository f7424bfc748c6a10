-- Reserves $2 jobs of today's quota (limit $3) in one statement, so two
-- concurrent requests cannot both take the last slot. The counter restarts
-- at UTC midnight. `counter` is null when the reservation would exceed the
-- limit; `before` is today's count as this statement's snapshot saw it
-- (the main query does not see the CTE's update, and after waiting on a
-- concurrent reservation it is stale: see organizationQuotaReserve).
WITH reserved AS (
  UPDATE spool.organizations
  SET jobs_today = CASE WHEN jobs_today_date = (now() AT TIME ZONE 'UTC')::date THEN jobs_today ELSE 0 END + $2,
      jobs_today_date = (now() AT TIME ZONE 'UTC')::date
  WHERE id = $1
    AND CASE WHEN jobs_today_date = (now() AT TIME ZONE 'UTC')::date THEN jobs_today ELSE 0 END + $2 <= $3
  RETURNING jobs_today
)
SELECT (SELECT jobs_today FROM reserved) AS counter,
       (SELECT CASE WHEN jobs_today_date = (now() AT TIME ZONE 'UTC')::date THEN jobs_today ELSE 0 END
          FROM spool.organizations WHERE id = $1) AS before;
