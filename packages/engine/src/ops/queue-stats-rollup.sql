-- Rolls the job_history rows after $1 (about $3 events, spool.job_history_after)
-- plus the re-read gap ids $2 (history-cursor.ts) into the per-minute and
-- per-hour activity of each queue (migration 023), adding to what the
-- buckets hold. Returns the ids
-- read and the snapshot bounds that settle gaps; the caller saves the
-- cursor in the same transaction, so every row is counted exactly once.
--
-- Counters, per row: a routine row (job_ids, migration 021) counts its jobs,
-- any other row one job. started = every claim, a re-run's too; failed =
-- failed attempts (reported, or a lease that expired) unless they ended a
-- cancellation; retried = failed attempts put back for another try (as
-- spooled_job_retries_total); deadlettered = jobs that failed for good;
-- expired = jobs whose expires_at passed before they ran. An edit counts
-- nothing: a dead-lettered job edited stays dead-lettered (migration 031).
--
-- Durations read the jobs of the rows (nothing is written per job). Each
-- history row's jobs are looked up together, `id = ANY (job_ids)`: one index
-- scan per row and partition of spool.jobs, and likewise one scan of the job
-- index for the row's re-runs. A batch's ids are neighbours in the primary
-- key (UUIDv7), so on PostgreSQL 17 and later such a scan reads a few leaf
-- pages instead of descending once per job into every day partition, which
-- a read by id cannot prune (docs/performance.md, "The history rollup's
-- reads"):
-- - wait, for first claims (routine claim rows): from when the job became
--   runnable (created_at, or scheduled_at when it was due later) to the
--   claim. A re-run's claim has no wait: the job row keeps neither when it
--   became due again nor, once retried again, the time it was.
-- - run, for completions: from the start of the attempt that completed, the
--   job's latest claim row of its own (a re-run) or else its first start.
-- A job deleted before its rows are rolled up is counted without durations.
WITH batch AS MATERIALIZED (
  (SELECT id, organization_id, queue_name, event, to_status, job_id, job_ids, created_at
   FROM spool.job_history_after($1, $3))
  UNION ALL
  (SELECT id, organization_id, queue_name, event, to_status, job_id, job_ids, created_at
   FROM spool.job_history WHERE id = ANY ($2::bigint[]) AND id <= $1)
),
horizon AS (
  -- The oldest bucket each ring still keeps (queue-stats-rotate.sql): older rows would land in a partition being reused.
  SELECT TIMESTAMPTZ '1970-01-01 00:00:00+00' + (floor(extract(epoch FROM now() - TIMESTAMPTZ '1970-01-01 00:00:00+00') / 86400) - 7) * interval '1 day' AS minutes,
         TIMESTAMPTZ '1970-01-01 00:00:00+00' + (floor(extract(epoch FROM now() - TIMESTAMPTZ '1970-01-01 00:00:00+00') / 864000) - 9) * interval '10 days' AS hours
),
kept AS MATERIALIZED (
  SELECT b.*, spool.stats_minute(b.created_at) AS minute, coalesce(cardinality(b.job_ids), 1) AS n
  FROM batch b
  WHERE b.created_at >= (SELECT hours FROM horizon)
),
counts AS (
  SELECT organization_id, queue_name, minute,
         coalesce(sum(n) FILTER (WHERE event = 'create'), 0)::int AS enqueued,
         coalesce(sum(n) FILTER (WHERE event = 'claim'), 0)::int AS started,
         coalesce(sum(n) FILTER (WHERE event = 'complete'), 0)::int AS completed,
         coalesce(sum(n) FILTER (WHERE event IN ('fail_retry', 'fail_final', 'lease_expired', 'timeout') AND to_status IS DISTINCT FROM 'cancelled'), 0)::int AS failed,
         coalesce(sum(n) FILTER (WHERE event IN ('fail_retry', 'lease_expired', 'timeout') AND to_status IN ('pending', 'scheduled')), 0)::int AS retried,
         coalesce(sum(n) FILTER (WHERE to_status IN ('failed', 'deadletter') AND event <> 'edit'), 0)::int AS deadlettered,
         coalesce(sum(n) FILTER (WHERE event = 'expire'), 0)::int AS expired
  FROM kept
  GROUP BY organization_id, queue_name, minute
),
-- The latest claim row of its own (a re-run's) of each completed job
-- before its completion row. A job that ran once has none.
reruns AS (
  SELECT DISTINCT ON (k.id, h.job_id) k.id AS row_id, h.job_id, h.created_at
  FROM kept k
  JOIN spool.job_history h
    ON h.organization_id = k.organization_id AND h.job_id = ANY (coalesce(k.job_ids, ARRAY[k.job_id]))
   AND h.event = 'claim' AND h.id < k.id
  WHERE k.event = 'complete'
  ORDER BY k.id, h.job_id, h.id DESC
),
samples AS (
  SELECT k.organization_id, k.queue_name, k.minute, 'wait' AS kind,
         greatest(0, extract(epoch FROM k.created_at - CASE WHEN j.scheduled_at > j.created_at AND j.scheduled_at <= k.created_at
                                                             THEN j.scheduled_at ELSE j.created_at END) * 1000)::float8 AS ms
  FROM kept k
  JOIN spool.jobs j ON j.id = ANY (k.job_ids)
  WHERE k.event = 'claim' AND k.job_ids IS NOT NULL
  UNION ALL
  SELECT k.organization_id, k.queue_name, k.minute, 'run',
         greatest(0, extract(epoch FROM k.created_at - coalesce(rerun.created_at, j.started_at)) * 1000)::float8
  FROM kept k
  JOIN spool.jobs j ON j.id = ANY (coalesce(k.job_ids, ARRAY[k.job_id]))
  LEFT JOIN reruns rerun ON rerun.row_id = k.id AND rerun.job_id = j.id
  WHERE k.event = 'complete' AND j.started_at IS NOT NULL
),
buckets AS (
  SELECT organization_id, queue_name, minute, kind, spool.stats_bucket(ms) AS k, count(*) AS n, sum(ms) AS sum_ms
  FROM samples
  GROUP BY organization_id, queue_name, minute, kind, spool.stats_bucket(ms)
),
hour_buckets AS (
  SELECT organization_id, queue_name, spool.stats_hour(minute) AS hour, kind, k, sum(n)::bigint AS n, sum(sum_ms) AS sum_ms
  FROM buckets
  GROUP BY organization_id, queue_name, spool.stats_hour(minute), kind, k
),
minute_durations AS (
  SELECT organization_id, queue_name, minute,
         coalesce(sum(n) FILTER (WHERE kind = 'wait'), 0)::int AS wait_count,
         coalesce(sum(sum_ms) FILTER (WHERE kind = 'wait'), 0) AS wait_sum_ms,
         coalesce(array_agg((k::bigint << 40) | n ORDER BY k) FILTER (WHERE kind = 'wait'), '{}') AS wait_hist,
         coalesce(sum(n) FILTER (WHERE kind = 'run'), 0)::int AS run_count,
         coalesce(sum(sum_ms) FILTER (WHERE kind = 'run'), 0) AS run_sum_ms,
         coalesce(array_agg((k::bigint << 40) | n ORDER BY k) FILTER (WHERE kind = 'run'), '{}') AS run_hist
  FROM buckets
  GROUP BY organization_id, queue_name, minute
),
hour_durations AS (
  SELECT organization_id, queue_name, hour,
         coalesce(sum(n) FILTER (WHERE kind = 'wait'), 0)::int AS wait_count,
         coalesce(sum(sum_ms) FILTER (WHERE kind = 'wait'), 0) AS wait_sum_ms,
         coalesce(array_agg((k::bigint << 40) | n ORDER BY k) FILTER (WHERE kind = 'wait'), '{}') AS wait_hist,
         coalesce(sum(n) FILTER (WHERE kind = 'run'), 0)::int AS run_count,
         coalesce(sum(sum_ms) FILTER (WHERE kind = 'run'), 0) AS run_sum_ms,
         coalesce(array_agg((k::bigint << 40) | n ORDER BY k) FILTER (WHERE kind = 'run'), '{}') AS run_hist
  FROM hour_buckets
  GROUP BY organization_id, queue_name, hour
),
hour_counts AS (
  SELECT organization_id, queue_name, spool.stats_hour(minute) AS hour,
         sum(enqueued)::int AS enqueued, sum(started)::int AS started, sum(completed)::int AS completed, sum(failed)::int AS failed,
         sum(retried)::int AS retried, sum(deadlettered)::int AS deadlettered, sum(expired)::int AS expired
  FROM counts
  GROUP BY organization_id, queue_name, spool.stats_hour(minute)
),
minutes AS (
  INSERT INTO spool.queue_stats_minute AS t (organization_id, queue_name, bucket, slot, enqueued, started, completed, failed, retried,
                                             deadlettered, expired, wait_count, wait_sum_ms, wait_hist, run_count, run_sum_ms, run_hist)
  SELECT c.organization_id, c.queue_name, c.minute, spool.stats_minute_slot(c.minute), c.enqueued, c.started, c.completed, c.failed,
         c.retried, c.deadlettered, c.expired, coalesce(d.wait_count, 0), coalesce(d.wait_sum_ms, 0), coalesce(d.wait_hist, '{}'),
         coalesce(d.run_count, 0), coalesce(d.run_sum_ms, 0), coalesce(d.run_hist, '{}')
  FROM counts c
  LEFT JOIN minute_durations d USING (organization_id, queue_name, minute)
  WHERE c.minute >= (SELECT minutes FROM horizon)
  ON CONFLICT (organization_id, queue_name, bucket, slot) DO UPDATE SET
    enqueued = t.enqueued + excluded.enqueued,
    started = t.started + excluded.started,
    completed = t.completed + excluded.completed,
    failed = t.failed + excluded.failed,
    retried = t.retried + excluded.retried,
    deadlettered = t.deadlettered + excluded.deadlettered,
    expired = t.expired + excluded.expired,
    wait_count = t.wait_count + excluded.wait_count,
    wait_sum_ms = t.wait_sum_ms + excluded.wait_sum_ms,
    wait_hist = CASE WHEN excluded.wait_count = 0 THEN t.wait_hist ELSE spool.stats_hist_add(t.wait_hist, excluded.wait_hist) END,
    run_count = t.run_count + excluded.run_count,
    run_sum_ms = t.run_sum_ms + excluded.run_sum_ms,
    run_hist = CASE WHEN excluded.run_count = 0 THEN t.run_hist ELSE spool.stats_hist_add(t.run_hist, excluded.run_hist) END
  RETURNING 1
),
hours AS (
  INSERT INTO spool.queue_stats_hour AS t (organization_id, queue_name, bucket, slot, enqueued, started, completed, failed, retried,
                                           deadlettered, expired, wait_count, wait_sum_ms, wait_hist, run_count, run_sum_ms, run_hist)
  SELECT c.organization_id, c.queue_name, c.hour, spool.stats_hour_slot(c.hour), c.enqueued, c.started, c.completed, c.failed,
         c.retried, c.deadlettered, c.expired, coalesce(d.wait_count, 0), coalesce(d.wait_sum_ms, 0), coalesce(d.wait_hist, '{}'),
         coalesce(d.run_count, 0), coalesce(d.run_sum_ms, 0), coalesce(d.run_hist, '{}')
  FROM hour_counts c
  LEFT JOIN hour_durations d USING (organization_id, queue_name, hour)
  ON CONFLICT (organization_id, queue_name, bucket, slot) DO UPDATE SET
    enqueued = t.enqueued + excluded.enqueued,
    started = t.started + excluded.started,
    completed = t.completed + excluded.completed,
    failed = t.failed + excluded.failed,
    retried = t.retried + excluded.retried,
    deadlettered = t.deadlettered + excluded.deadlettered,
    expired = t.expired + excluded.expired,
    wait_count = t.wait_count + excluded.wait_count,
    wait_sum_ms = t.wait_sum_ms + excluded.wait_sum_ms,
    wait_hist = CASE WHEN excluded.wait_count = 0 THEN t.wait_hist ELSE spool.stats_hist_add(t.wait_hist, excluded.wait_hist) END,
    run_count = t.run_count + excluded.run_count,
    run_sum_ms = t.run_sum_ms + excluded.run_sum_ms,
    run_hist = CASE WHEN excluded.run_count = 0 THEN t.run_hist ELSE spool.stats_hist_add(t.run_hist, excluded.run_hist) END
  RETURNING 1
)
SELECT (SELECT coalesce(array_agg(id), '{}') FROM batch) AS ids,
       pg_snapshot_xmin(pg_current_snapshot())::text AS snapshot_xmin,
       pg_snapshot_xmax(pg_current_snapshot())::text AS snapshot_xmax,
       (SELECT coalesce(sum(n), 0) FROM kept)::bigint AS events,
       (SELECT count(*) FROM minutes)::int AS minutes,
       (SELECT count(*) FROM hours)::int AS hours;
