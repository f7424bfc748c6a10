-- Reserves $2 jobs of today's quota (limit $3) in one statement, so two
-- concurrent requests cannot both take the last slot. The counter restarts
-- at UTC midnight. `counter` is the new count, or null when the reservation
-- would exceed the limit (organizationQuotaReserve then reads the count that
-- refused it in a statement of its own: this statement's snapshot can
-- predate the concurrent reservations it waited for).
UPDATE spool.organizations
SET jobs_today = CASE WHEN jobs_today_date = (now() AT TIME ZONE 'UTC')::date THEN jobs_today ELSE 0 END + $2,
    jobs_today_date = (now() AT TIME ZONE 'UTC')::date
WHERE id = $1
  AND CASE WHEN jobs_today_date = (now() AT TIME ZONE 'UTC')::date THEN jobs_today ELSE 0 END + $2 <= $3
RETURNING jobs_today AS counter;
