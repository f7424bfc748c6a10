-- An organization's activity (its queues matching the LIKE patterns $2, or
-- all with NULL) added up per step from $3 to $4 (step-aligned by the caller):
-- $5 = 60 reads the minute table, 3600 the hour table (the other arm is
-- skipped before it reads anything), plus the log rows not rolled up yet
-- (their counts; their durations come with the rollup, seconds later).
-- Only buckets with activity; the caller fills in the empty ones.
WITH activity AS (
  SELECT bucket, enqueued, started, completed, failed, retried, deadlettered, expired, wait_hist, run_hist
  FROM spool.queue_stats_minute
  WHERE $5::int = 60 AND organization_id = $1 AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[])) AND bucket >= $3 AND bucket < $4
  UNION ALL
  SELECT bucket, enqueued, started, completed, failed, retried, deadlettered, expired, wait_hist, run_hist
  FROM spool.queue_stats_hour
  WHERE $5::int = 3600 AND organization_id = $1 AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[])) AND bucket >= $3 AND bucket < $4
  UNION ALL
  SELECT date_bin(make_interval(secs => $5::int), created_at, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
         enqueued, started, completed, failed, retried, deadlettered, expired, '{}', '{}'
  FROM spool.queue_stats_pending
  WHERE organization_id = $1 AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[])) AND created_at >= $3 AND created_at < $4
)
SELECT bucket AS t, sum(enqueued)::bigint AS enqueued, sum(started)::bigint AS started, sum(completed)::bigint AS completed,
       sum(failed)::bigint AS failed, sum(retried)::bigint AS retried, sum(deadlettered)::bigint AS deadlettered,
       sum(expired)::bigint AS expired, spool.stats_hist_sum(wait_hist) AS wait_hist, spool.stats_hist_sum(run_hist) AS run_hist
FROM activity
GROUP BY bucket
ORDER BY bucket;
