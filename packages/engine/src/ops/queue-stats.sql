-- Stats of one queue, configured or not (unknown queues give zeros).
-- Active counts read only unfinished rows. The 24 h figures come from the
-- queue's activity history (migration 023), not from its finished jobs: the
-- rolled-up hours and minutes of the last day plus the log rows not rolled
-- up yet, so the counts are exact and current and the cost is a few index
-- probes whatever the number of jobs kept. failed and deadletter count jobs
-- that failed for good (the dead-letter queue), as before. The average run
-- time also takes the completions not rolled up yet, at most 100 of them
-- (primary-key reads of their jobs, from their first start).
WITH active AS (
  SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
         count(*) FILTER (WHERE status = 'scheduled')::int AS scheduled,
         -- processing jobs are not in the listing indexes (migration 043)
         (SELECT count(*) FROM spool.jobs
          WHERE organization_id = $1 AND queue_name = $2 AND status = 'processing')::int AS processing,
         min(created_at) FILTER (WHERE status = 'pending') AS oldest_pending
  FROM spool.jobs
  WHERE organization_id = $1 AND queue_name = $2 AND status IN ('pending', 'scheduled') AND status <> 'processing'
),
recent AS (
  SELECT coalesce(sum(completed), 0)::int AS completed,
         coalesce(sum(deadlettered), 0)::int AS failed,
         coalesce(sum(deadlettered), 0)::int AS deadletter,
         coalesce(sum(run_count), 0)::float8 AS run_count,
         coalesce(sum(run_sum_ms), 0)::float8 AS run_sum_ms
  FROM spool.queue_activity(now() - interval '24 hours')
  WHERE organization_id = $1 AND queue_name = $2
),
unrolled AS (
  SELECT count(*)::float8 AS run_count, coalesce(sum(extract(epoch FROM p.created_at - j.started_at) * 1000), 0)::float8 AS run_sum_ms
  FROM (
    SELECT p.created_at, x.id
    FROM spool.queue_stats_pending p
    CROSS JOIN LATERAL unnest(p.job_ids) AS x(id)
    WHERE p.organization_id = $1 AND p.queue_name = $2 AND p.event = 'complete'
    LIMIT 100
  ) p
  -- One primary-key probe per id, never a hash join against a scan of
  -- jobs_live (organization-dashboard.sql says why).
  CROSS JOIN LATERAL (
    SELECT j.started_at FROM spool.jobs j
    WHERE j.id = p.id AND j.organization_id = $1 AND j.started_at IS NOT NULL
    LIMIT 1
  ) j
)
SELECT a.pending, a.scheduled, a.processing,
       r.completed AS completed_24h, r.failed AS failed_24h, r.deadletter AS deadletter_24h,
       CASE WHEN r.run_count + u.run_count > 0 THEN (r.run_sum_ms + u.run_sum_ms) / (r.run_count + u.run_count) END AS avg_processing_ms,
       floor(extract(epoch FROM now() - a.oldest_pending))::int AS max_job_age_seconds,
       (SELECT count(*)::int FROM spool.workers w
         WHERE w.organization_id = $1 AND (w.queue_name = $2 OR $2 = ANY (w.queue_names))
           AND w.status IN ('healthy', 'degraded')) AS active_workers,
       (SELECT NOT enabled FROM spool.queue_config qc WHERE qc.organization_id = $1 AND qc.queue_name = $2) AS paused
FROM active a, recent r, unrolled u;
