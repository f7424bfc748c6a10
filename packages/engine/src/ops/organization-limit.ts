import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const lock = sqlFile(import.meta.url, './organization-limit-lock.sql');
const count = sqlFile(import.meta.url, './organization-limit-count.sql');

/** Resources whose plan limit is a count of rows the organization holds. */
export type CountedResource = 'workers' | 'api_keys' | 'schedules' | 'workflows' | 'webhooks';

/**
 * Takes the organization's plan-limit lock for `resource` (`jobs` for active
 * jobs and jobs per day) until the caller's transaction ends.
 */
export async function organizationLimitLock(db: Queryable, organizationId: string, resource: CountedResource | 'jobs'): Promise<void> {
  await run(db, lock, [organizationId, resource]);
}

/**
 * How many of `resource` the organization holds, counted up to `cap`. For
 * workers, `worker` is the identity being registered, which is not counted.
 */
export async function organizationLimitCount(
  db: Queryable,
  organizationId: string,
  resource: CountedResource,
  cap: number,
  worker: { hostname: string; queueName: string } | null = null,
): Promise<number> {
  const rows = await run<{ current: number }>(db, count, [organizationId, resource, cap, worker?.hostname ?? null, worker?.queueName ?? null]);
  return Number(rows[0]?.current ?? 0);
}
