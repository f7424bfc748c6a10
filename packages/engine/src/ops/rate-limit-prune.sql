-- Forgets budgets whose window ended more than $1 ms ago: their next request
-- starts a fresh window anyway, and a flood from many client IPs would
-- otherwise leave a row per address behind. A sequential scan of a table as
-- small as its active keys and IPs; no index, so that counting stays a HOT
-- update (migration 017).
DELETE FROM spool.rate_limit_counters
WHERE bucket IN (
  SELECT bucket FROM spool.rate_limit_counters
  WHERE window_end < now() - make_interval(secs => $1::float8 / 1000)
  LIMIT $2
)
RETURNING bucket;
