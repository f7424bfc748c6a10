-- Platform-wide figures for GET /admin/stats (the one cross-tenant query;
-- only the admin key reaches it). The 24 h figures come from the queues'
-- activity history (migration 023), as in queue-stats.sql: jobs completed,
-- and jobs that failed for good, whatever has been deleted since.
SELECT
  (SELECT count(*) FROM spool.organizations) AS organizations_total,
  (SELECT coalesce(json_agg(json_build_object('plan', plan_tier, 'count', n) ORDER BY plan_tier), '[]'::json)
     FROM (SELECT plan_tier, count(*) AS n FROM spool.organizations GROUP BY plan_tier) p) AS by_plan,
  (SELECT count(*) FROM spool.organizations WHERE created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS created_today,
  (SELECT count(*) FROM spool.organizations WHERE created_at >= now() - interval '7 days') AS created_this_week,
  (SELECT count(*) FROM spool.jobs WHERE status = 'pending') AS pending,
  (SELECT count(*) FROM spool.jobs WHERE status = 'processing') AS processing,
  (SELECT count(*) FROM spool.jobs WHERE status = 'scheduled') AS scheduled,
  day.completed_24h,
  day.failed_24h,
  (SELECT count(*) FROM spool.workers WHERE status <> 'offline') AS workers_total,
  (SELECT count(*) FROM spool.workers WHERE status = 'healthy') AS workers_healthy,
  (SELECT count(*) FROM spool.workers WHERE status = 'degraded') AS workers_degraded
FROM (SELECT coalesce(sum(completed), 0)::bigint AS completed_24h, coalesce(sum(deadlettered), 0)::bigint AS failed_24h
      FROM spool.queue_activity(now() - interval '24 hours')) day;
