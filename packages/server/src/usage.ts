import { organizationUsageCounts, type Db, type OrganizationCounts, type OrganizationRow } from '@spool/engine';
import { planLimits, usageInfo, type UsageCounts, type UsageInfo } from './plans.js';

/**
 * Usage counts as reported. `jobs_today` is the daily quota counter for plans
 * with a daily limit (the number enforced, reset by admin reset-usage) and,
 * for plans without one, where no counter is kept, the jobs created since
 * UTC midnight.
 */
export function usageCounts(row: OrganizationCounts | undefined, maxJobsPerDay: number | null): UsageCounts {
  if (!row) return { jobs_today: 0, active_jobs: 0, queues: 0, workers: 0, api_keys: 0, schedules: 0, workflows: 0, webhooks: 0 };
  return {
    jobs_today: maxJobsPerDay === null ? row.jobs_created_today : row.jobs_today_counter,
    active_jobs: row.active_jobs,
    queues: row.queues,
    workers: row.workers,
    api_keys: row.api_keys,
    schedules: row.schedules,
    workflows: row.workflows,
    webhooks: row.webhooks,
  };
}

/** UsageInfo (docs/compatibility.md §3.14) of each organization, keyed by id. */
export async function usageInfos(db: Db, organizations: Pick<OrganizationRow, 'id' | 'plan_tier' | 'custom_limits'>[]): Promise<Map<string, UsageInfo>> {
  const counts = await organizationUsageCounts(db, organizations.map((o) => o.id));
  const out = new Map<string, UsageInfo>();
  for (const organization of organizations) {
    const limits = planLimits(organization.plan_tier, organization.custom_limits);
    out.set(organization.id, usageInfo(limits, usageCounts(counts.get(organization.id), limits.max_jobs_per_day)));
  }
  return out;
}
