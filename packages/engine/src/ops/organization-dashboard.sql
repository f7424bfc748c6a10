-- The aggregate behind GET /dashboard: totals, last-24h and last-hour
-- activity, average wait and run times over the last 24 hours, per-queue
-- backlog and workers; with $2 (the caller's queues as LIKE patterns; NULL
-- = all) only of those queues. Live counts read the unfinished and
-- dead-lettered jobs (status indexes); activity comes from the queues'
-- history (migration 023: rolled-up buckets plus the log rows not rolled up
-- yet), so it costs the same whatever the number of finished jobs kept.
-- Only `total`, every job the organization keeps, still counts them (an
-- index-only count). The averages take the first claims and completions not
-- rolled up yet too, at most 100 jobs of each (primary-key reads).
-- Processing jobs are not in the listing indexes (migration 043): the counts
-- that include them read them in a branch of their own (running).
WITH running AS (
  SELECT queue_name, count(*) AS processing
  FROM spool.jobs
  WHERE organization_id = $1 AND status = 'processing' AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
  GROUP BY queue_name
),
totals AS (
  SELECT count(*) + (SELECT coalesce(sum(processing), 0) FROM running)::bigint AS total
  FROM spool.jobs
  WHERE organization_id = $1 AND status <> 'processing' AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
),
live AS (
  SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
         (SELECT coalesce(sum(processing), 0) FROM running)::bigint AS processing,
         count(*) FILTER (WHERE status = 'deadletter') AS deadletter
  FROM spool.jobs
  WHERE organization_id = $1 AND status IN ('pending', 'deadletter') AND status <> 'processing'
    AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
),
day AS (
  SELECT coalesce(sum(completed), 0)::bigint AS completed_24h,
         coalesce(sum(deadlettered), 0)::bigint AS failed_24h,
         coalesce(sum(wait_count), 0)::float8 AS wait_count,
         coalesce(sum(wait_sum_ms), 0)::float8 AS wait_sum_ms,
         coalesce(sum(run_count), 0)::float8 AS run_count,
         coalesce(sum(run_sum_ms), 0)::float8 AS run_sum_ms
  FROM spool.queue_activity(now() - interval '24 hours')
  WHERE organization_id = $1 AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
),
hour AS (
  SELECT coalesce(sum(enqueued), 0)::bigint AS created_1h,
         coalesce(sum(completed), 0)::bigint AS completed_1h,
         coalesce(sum(deadlettered), 0)::bigint AS failed_1h
  FROM spool.queue_activity(now() - interval '1 hour')
  WHERE organization_id = $1 AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
),
unrolled AS (
  SELECT count(*) FILTER (WHERE p.event = 'claim')::float8 AS wait_count,
         coalesce(sum(extract(epoch FROM p.created_at - CASE WHEN j.scheduled_at > j.created_at AND j.scheduled_at <= p.created_at
                                                            THEN j.scheduled_at ELSE j.created_at END) * 1000) FILTER (WHERE p.event = 'claim'), 0)::float8 AS wait_sum_ms,
         count(*) FILTER (WHERE p.event = 'complete')::float8 AS run_count,
         coalesce(sum(extract(epoch FROM p.created_at - j.started_at) * 1000) FILTER (WHERE p.event = 'complete'), 0)::float8 AS run_sum_ms
  FROM (
    (SELECT p.event, p.created_at, x.id
     FROM spool.queue_stats_pending p
     CROSS JOIN LATERAL unnest(p.job_ids) AS x(id)
     WHERE p.organization_id = $1 AND p.event = 'claim' AND ($2::text[] IS NULL OR p.queue_name LIKE ANY ($2::text[]))
     LIMIT 100)
    UNION ALL
    (SELECT p.event, p.created_at, x.id
     FROM spool.queue_stats_pending p
     CROSS JOIN LATERAL unnest(p.job_ids) AS x(id)
     WHERE p.organization_id = $1 AND p.event = 'complete' AND ($2::text[] IS NULL OR p.queue_name LIKE ANY ($2::text[]))
     LIMIT 100)
  ) p
  -- One primary-key probe per id, whatever the estimates: as a plain join
  -- the planner may hash it against a sequential scan of jobs_live when it
  -- guesses the 200 ids dearer to probe one by one. LIMIT 1 keeps the
  -- subquery from being flattened into that join.
  CROSS JOIN LATERAL (
    SELECT j.created_at, j.scheduled_at, j.started_at FROM spool.jobs j
    WHERE j.id = p.id AND j.organization_id = $1 AND j.started_at IS NOT NULL
    LIMIT 1
  ) j
),
jobs AS (
  SELECT totals.total, live.pending, live.processing, live.deadletter, day.completed_24h, day.failed_24h,
         hour.created_1h, hour.completed_1h, hour.failed_1h,
         CASE WHEN day.wait_count + unrolled.wait_count > 0
              THEN (day.wait_sum_ms + unrolled.wait_sum_ms) / (day.wait_count + unrolled.wait_count) END AS avg_wait_time_ms,
         CASE WHEN day.run_count + unrolled.run_count > 0
              THEN (day.run_sum_ms + unrolled.run_sum_ms) / (day.run_count + unrolled.run_count) END AS avg_processing_time_ms
  FROM totals, live, day, hour, unrolled
),
queues AS (
  SELECT coalesce(json_agg(json_build_object('name', name, 'pending', pending, 'processing', processing, 'paused', paused) ORDER BY name), '[]'::json) AS list
  FROM (
    SELECT name, sum(pending)::int AS pending, sum(processing)::int AS processing, bool_or(paused) AS paused
    FROM (
      SELECT queue_name AS name, count(*) AS pending, 0 AS processing, false AS paused
      FROM spool.jobs
      WHERE organization_id = $1 AND status = 'pending' AND status <> 'processing' AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
      GROUP BY queue_name
      UNION ALL
      SELECT queue_name, 0, processing, false FROM running
      UNION ALL
      SELECT queue_name, 0, 0, NOT enabled FROM spool.queue_config WHERE organization_id = $1 AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
    ) per_source
    GROUP BY name
    ORDER BY name
    LIMIT 1000
  ) q
),
workers AS (
  SELECT count(*) FILTER (WHERE status <> 'offline') AS total,
         count(*) FILTER (WHERE status = 'healthy') AS healthy
  FROM spool.workers
  WHERE organization_id = $1
    AND ($2::text[] IS NULL OR EXISTS (
      SELECT 1 FROM unnest(array_append(queue_names, queue_name)) AS q(name) WHERE q.name LIKE ANY ($2::text[])))
)
SELECT jobs.*, queues.list AS queues, workers.total AS workers_total, workers.healthy AS workers_healthy
FROM jobs, queues, workers;
