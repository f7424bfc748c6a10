-- Resource counts of organizations (docs/compatibility.md §3.14 "Counts"): active jobs =
-- pending + scheduled + processing; queues = config rows; workers = healthy +
-- degraded; API keys = active; schedules = active; workflows = pending or
-- running; webhooks = enabled. `jobs_today_counter` is the
-- daily quota counter (maintained only for plans with a daily limit);
-- `jobs_created_today` counts rows created since UTC midnight.
SELECT o.id,
  CASE WHEN o.jobs_today_date = (now() AT TIME ZONE 'UTC')::date THEN o.jobs_today ELSE 0 END AS jobs_today_counter,
  -- (processing jobs are not in the listing indexes, migration 043: each
  -- count has a branch for them)
  (SELECT count(*) FROM spool.jobs j
    WHERE j.organization_id = o.id AND j.status <> 'processing' AND j.created_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'))
    + (SELECT count(*) FROM spool.jobs j
       WHERE j.organization_id = o.id AND j.status = 'processing' AND j.created_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')) AS jobs_created_today,
  (SELECT count(*) FROM spool.jobs j WHERE j.organization_id = o.id AND j.status IN ('pending', 'scheduled') AND j.status <> 'processing')
    + (SELECT count(*) FROM spool.jobs j WHERE j.organization_id = o.id AND j.status = 'processing') AS active_jobs,
  (SELECT count(*) FROM spool.queue_config q WHERE q.organization_id = o.id) AS queues,
  (SELECT count(*) FROM spool.workers w WHERE w.organization_id = o.id AND w.status IN ('healthy', 'degraded')) AS workers,
  (SELECT count(*) FROM spool.api_keys k WHERE k.organization_id = o.id AND k.is_active) AS api_keys,
  (SELECT count(*) FROM spool.schedules s WHERE s.organization_id = o.id AND s.is_active) AS schedules,
  (SELECT count(*) FROM spool.workflows f WHERE f.organization_id = o.id AND f.status IN ('pending', 'running')) AS workflows,
  (SELECT count(*) FROM spool.outgoing_webhooks h WHERE h.organization_id = o.id AND h.enabled) AS webhooks
FROM spool.organizations o
WHERE o.id = ANY($1::uuid[]);
