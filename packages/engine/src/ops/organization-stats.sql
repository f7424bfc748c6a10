-- Platform-wide figures for GET /admin/stats (the one cross-tenant query;
-- only the admin key reaches it).
SELECT
  (SELECT count(*) FROM spool.organizations) AS organizations_total,
  (SELECT coalesce(json_agg(json_build_object('plan', plan_tier, 'count', n) ORDER BY plan_tier), '[]'::json)
     FROM (SELECT plan_tier, count(*) AS n FROM spool.organizations GROUP BY plan_tier) p) AS by_plan,
  (SELECT count(*) FROM spool.organizations WHERE created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS created_today,
  (SELECT count(*) FROM spool.organizations WHERE created_at >= now() - interval '7 days') AS created_this_week,
  (SELECT count(*) FROM spool.jobs WHERE status = 'pending') AS pending,
  (SELECT count(*) FROM spool.jobs WHERE status = 'processing') AS processing,
  (SELECT count(*) FROM spool.jobs WHERE status = 'scheduled') AS scheduled,
  (SELECT count(*) FROM spool.jobs WHERE status = 'completed' AND completed_at >= now() - interval '24 hours') AS completed_24h,
  (SELECT count(*) FROM spool.jobs WHERE status IN ('failed', 'deadletter') AND completed_at >= now() - interval '24 hours') AS failed_24h,
  (SELECT count(*) FROM spool.workers WHERE status <> 'offline') AS workers_total,
  (SELECT count(*) FROM spool.workers WHERE status = 'healthy') AS workers_healthy,
  (SELECT count(*) FROM spool.workers WHERE status = 'degraded') AS workers_degraded;
