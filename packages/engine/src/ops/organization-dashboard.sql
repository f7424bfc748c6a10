-- The aggregate behind GET /dashboard, in one pass over the organization's
-- jobs: totals, last-24h and last-hour activity, average wait and run times
-- of jobs finished in the last 24 hours, per-queue backlog and workers; with
-- $2 (the caller's queues as LIKE patterns; NULL = all) only of those queues.
WITH jobs AS (
  SELECT
    count(*) AS total,
    count(*) FILTER (WHERE status = 'pending') AS pending,
    count(*) FILTER (WHERE status = 'processing') AS processing,
    count(*) FILTER (WHERE status = 'deadletter') AS deadletter,
    count(*) FILTER (WHERE status = 'completed' AND completed_at >= now() - interval '24 hours') AS completed_24h,
    count(*) FILTER (WHERE status IN ('failed', 'deadletter') AND completed_at >= now() - interval '24 hours') AS failed_24h,
    count(*) FILTER (WHERE created_at >= now() - interval '1 hour') AS created_1h,
    count(*) FILTER (WHERE status = 'completed' AND completed_at >= now() - interval '1 hour') AS completed_1h,
    count(*) FILTER (WHERE status IN ('failed', 'deadletter') AND completed_at >= now() - interval '1 hour') AS failed_1h,
    avg(extract(epoch FROM started_at - greatest(created_at, coalesce(scheduled_at, created_at))) * 1000)
      FILTER (WHERE status = 'completed' AND completed_at >= now() - interval '24 hours')::float8 AS avg_wait_time_ms,
    avg(extract(epoch FROM completed_at - started_at) * 1000)
      FILTER (WHERE status = 'completed' AND completed_at >= now() - interval '24 hours')::float8 AS avg_processing_time_ms
  FROM spool.jobs
  WHERE organization_id = $1 AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
),
queues AS (
  SELECT coalesce(json_agg(json_build_object('name', name, 'pending', pending, 'processing', processing, 'paused', paused) ORDER BY name), '[]'::json) AS list
  FROM (
    SELECT name, sum(pending)::int AS pending, sum(processing)::int AS processing, bool_or(paused) AS paused
    FROM (
      SELECT queue_name AS name,
             count(*) FILTER (WHERE status = 'pending') AS pending,
             count(*) FILTER (WHERE status = 'processing') AS processing,
             false AS paused
      FROM spool.jobs
      WHERE organization_id = $1 AND status IN ('pending', 'processing') AND ($2::text[] IS NULL OR queue_name LIKE ANY ($2::text[]))
      GROUP BY queue_name
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
