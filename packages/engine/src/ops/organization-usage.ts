import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';

const usage = sqlFile(import.meta.url, './organization-usage.sql');
const jobTotal = sqlFile(import.meta.url, './organization-job-total.sql');
const activeJobs = sqlFile(import.meta.url, './organization-active-jobs.sql');
const reserve = sqlFile(import.meta.url, './organization-quota-reserve.sql');
const release = sqlFile(import.meta.url, './organization-quota-release.sql');
const today = sqlFile(import.meta.url, './organization-quota-today.sql');
const reset = sqlFile(import.meta.url, './organization-quota-reset.sql');
const stats = sqlFile(import.meta.url, './organization-stats.sql');
const dashboard = sqlFile(import.meta.url, './organization-dashboard.sql');

export interface OrganizationCounts {
  id: string;
  jobs_today_counter: number;
  jobs_created_today: number;
  active_jobs: number;
  queues: number;
  workers: number;
  api_keys: number;
  schedules: number;
  workflows: number;
  webhooks: number;
}

/** Resource counts of each organization (docs/compatibility.md §3.14), keyed by id. */
export async function organizationUsageCounts(db: Queryable, ids: string[]): Promise<Map<string, OrganizationCounts>> {
  const valid = ids.filter(isUuid);
  const out = new Map<string, OrganizationCounts>();
  if (valid.length === 0) return out;
  for (const row of await run<OrganizationCounts>(db, usage, [valid])) out.set(row.id, row);
  return out;
}

/** Every job the organization holds, finished ones included. */
export async function organizationJobTotal(db: Queryable, id: string): Promise<number> {
  const rows = await run<{ total: number }>(db, jobTotal, [id]);
  return rows[0]?.total ?? 0;
}

/** Active jobs (pending, scheduled, processing), counted up to `cap`. */
export async function organizationActiveJobs(db: Queryable, id: string, cap: number): Promise<number> {
  const rows = await run<{ active: number }>(db, activeJobs, [id, cap]);
  return rows[0]?.active ?? 0;
}

/**
 * Atomically reserves `count` of today's job quota (`limit` per UTC day).
 * `counter` is the new count, or null when the reservation would exceed the
 * limit; `before` is today's count before this call.
 */
export async function organizationQuotaReserve(db: Queryable, id: string, count: number, limit: number): Promise<{ counter: number | null; before: number }> {
  const [reserved] = await run<{ counter: number }>(db, reserve, [id, count, limit]);
  if (reserved) return { counter: reserved.counter, before: reserved.counter - count };
  // Refused: read the count that refused it afresh (a refusal that waited on
  // concurrent reservations saw them only in its re-check). Only refusals pay this query.
  const fresh = await run<{ today: number }>(db, today, [id]);
  return { counter: null, before: fresh[0]?.today ?? 0 };
}

/** Returns unused reserved quota (e.g. idempotent repeats that created nothing). */
export async function organizationQuotaRelease(db: Queryable, id: string, count: number): Promise<void> {
  if (count <= 0) return;
  await run(db, release, [id, count]);
}

/** Sets today's job counter to zero; false when the organization does not exist. */
export async function organizationQuotaReset(db: Queryable, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  return (await run(db, reset, [id])).length > 0;
}

export interface PlatformStats {
  organizations_total: number;
  by_plan: { plan: string; count: number }[];
  created_today: number;
  created_this_week: number;
  pending: number;
  processing: number;
  scheduled: number;
  completed_24h: number;
  failed_24h: number;
  workers_total: number;
  workers_healthy: number;
  workers_degraded: number;
}

/** Platform-wide figures (admin only). */
export async function platformStats(db: Queryable): Promise<PlatformStats> {
  const rows = await run<PlatformStats>(db, stats, []);
  return rows[0]!;
}

export interface DashboardFigures {
  total: number;
  pending: number;
  processing: number;
  deadletter: number;
  completed_24h: number;
  failed_24h: number;
  created_1h: number;
  completed_1h: number;
  failed_1h: number;
  avg_wait_time_ms: number | null;
  avg_processing_time_ms: number | null;
  queues: { name: string; pending: number; processing: number; paused: boolean }[];
  workers_total: number;
  workers_healthy: number;
}

/** The organization's dashboard aggregate in one statement. */
export async function organizationDashboard(db: Queryable, id: string, queues: string[] | null = null): Promise<DashboardFigures> {
  const rows = await run<DashboardFigures>(db, dashboard, [id, queues]);
  return rows[0]!;
}
