-- One queue's activity per step from $3 to $4 (step-aligned by the caller):
-- $5 = 60 reads the minute table, 3600 the hour table (the other arm is
-- skipped before it reads anything), plus the log rows not rolled up yet
-- (their counts; their durations come with the rollup, seconds later).
-- Only buckets with activity; the caller fills in the empty ones.
WITH activity AS (
  SELECT bucket, enqueued, started, completed, failed, retried, deadlettered, expired, wait_hist, run_hist
  FROM spool.queue_stats_minute
  WHERE $5::int = 60 AND organization_id = $1 AND queue_name = $2 AND bucket >= $3 AND bucket < $4
  UNION ALL
  SELECT bucket, enqueued, started, completed, failed, retried, deadlettered, expired, wait_hist, run_hist
  FROM spool.queue_stats_hour
  WHERE $5::int = 3600 AND organization_id = $1 AND queue_name = $2 AND bucket >= $3 AND bucket < $4
  UNION ALL
  SELECT date_bin(make_interval(secs => $5::int), created_at, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
         enqueued, started, completed, failed, retried, deadlettered, expired, '{}'::bigint[], '{}'::bigint[]
  FROM spool.queue_stats_pending
  WHERE organization_id = $1 AND queue_name = $2 AND created_at >= $3 AND created_at < $4
),
-- Histograms merge bucket by bucket in one pass over their elements (a
-- call of spool.stats_hist_add per row costs ten times as much).
counts AS (
  SELECT bucket, sum(enqueued)::bigint AS enqueued, sum(started)::bigint AS started, sum(completed)::bigint AS completed,
         sum(failed)::bigint AS failed, sum(retried)::bigint AS retried, sum(deadlettered)::bigint AS deadlettered,
         sum(expired)::bigint AS expired
  FROM activity
  GROUP BY bucket
),
waits AS (
  SELECT bucket, array_agg((k << 40) | n ORDER BY k) AS wait_hist
  FROM (SELECT bucket, e >> 40 AS k, sum(e & 1099511627775)::bigint AS n FROM activity CROSS JOIN LATERAL unnest(wait_hist) AS e GROUP BY bucket, e >> 40) s
  GROUP BY bucket
),
runs AS (
  SELECT bucket, array_agg((k << 40) | n ORDER BY k) AS run_hist
  FROM (SELECT bucket, e >> 40 AS k, sum(e & 1099511627775)::bigint AS n FROM activity CROSS JOIN LATERAL unnest(run_hist) AS e GROUP BY bucket, e >> 40) s
  GROUP BY bucket
)
SELECT c.bucket AS t, c.enqueued, c.started, c.completed, c.failed, c.retried, c.deadlettered, c.expired, w.wait_hist, r.run_hist
FROM counts c
LEFT JOIN waits w USING (bucket)
LEFT JOIN runs r USING (bucket)
ORDER BY c.bucket;
