-- Stats of one queue, configured or not (unknown queues give zeros).
-- Active counts read only unfinished rows; the 24 h figures read the
-- queue's finished rows that ended in the last day.
WITH active AS (
  SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
         count(*) FILTER (WHERE status = 'scheduled')::int AS scheduled,
         count(*) FILTER (WHERE status = 'processing')::int AS processing,
         min(created_at) FILTER (WHERE status = 'pending') AS oldest_pending
  FROM spool.jobs
  WHERE organization_id = $1 AND queue_name = $2 AND status IN ('pending', 'scheduled', 'processing')
),
recent AS (
  SELECT count(*) FILTER (WHERE status = 'completed')::int AS completed,
         count(*) FILTER (WHERE status IN ('failed', 'deadletter'))::int AS failed,
         count(*) FILTER (WHERE status = 'deadletter')::int AS deadletter,
         avg(extract(epoch FROM completed_at - started_at) * 1000)
           FILTER (WHERE status = 'completed' AND started_at IS NOT NULL)::double precision AS avg_processing_ms
  FROM spool.jobs
  WHERE organization_id = $1 AND queue_name = $2 AND status IN ('completed', 'failed', 'deadletter')
    AND completed_at > now() - interval '24 hours'
)
SELECT a.pending, a.scheduled, a.processing,
       r.completed AS completed_24h, r.failed AS failed_24h, r.deadletter AS deadletter_24h, r.avg_processing_ms,
       floor(extract(epoch FROM now() - a.oldest_pending))::int AS max_job_age_seconds,
       (SELECT count(*)::int FROM spool.workers w
         WHERE w.organization_id = $1 AND (w.queue_name = $2 OR $2 = ANY (w.queue_names))
           AND w.status IN ('healthy', 'degraded')) AS active_workers,
       (SELECT NOT enabled FROM spool.queue_config qc WHERE qc.organization_id = $1 AND qc.queue_name = $2) AS paused
FROM active a, recent r;
