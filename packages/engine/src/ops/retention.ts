import type { Db, Queryable } from '../db.js';
import { run, sqlFile, transaction } from '../db.js';
import { jobReleaseWorker } from './maintenance.js';

const retentionDelete = sqlFile(import.meta.url, './job-retention-delete.sql');
const markOffline = sqlFile(import.meta.url, './worker-mark-offline.sql');
const tokenPrune = sqlFile(import.meta.url, './revoked-token-prune.sql');
const runPrune = sqlFile(import.meta.url, './schedule-run-prune.sql');
const eventPruneSql = sqlFile(import.meta.url, './event-prune.sql');
const historyPruneSql = sqlFile(import.meta.url, './history-prune.sql');

/** Finished statuses with a retention window, and the settings key that overrides it per queue. */
export type RetainedStatus = 'completed' | 'failed' | 'cancelled' | 'deadletter';

/**
 * Deletes up to `batchSize` jobs of the given statuses whose completed_at is
 * past their window (per queue: queue_config.settings.retention.<status>_days,
 * else `defaultDays[status]`), with their history. Returns what it deleted.
 */
export async function jobRetentionDelete(db: Queryable, defaultDays: Partial<Record<RetainedStatus, number>>, batchSize: number): Promise<{ jobs: number; history: number }> {
  const statuses = Object.keys(defaultDays) as RetainedStatus[];
  const [row] = await run<{ jobs: number; history: number }>(db, retentionDelete, [statuses, statuses.map((s) => defaultDays[s]!), batchSize]);
  return { jobs: row?.jobs ?? 0, history: row?.history ?? 0 };
}

/**
 * Marks workers without a heartbeat for `silenceMs` offline and gives their
 * processing jobs back (pending, lease cleared, no retry counted), in one
 * transaction. Returns how many workers and jobs.
 */
export async function workerMarkOffline(db: Db, silenceMs: number, batchSize: number): Promise<{ workers: number; jobs: number }> {
  return transaction(db, async (client) => {
    const workers = await run<{ id: string; organization_id: string }>(client, markOffline, [silenceMs, batchSize]);
    let jobs = 0;
    for (const worker of workers) {
      jobs += await jobReleaseWorker(client, worker.organization_id, worker.id, `Worker ${worker.id} missed its heartbeats and was marked offline`);
    }
    return { workers: workers.length, jobs };
  });
}

/** Forgets revoked tokens that expired more than `graceMs` ago. Returns how many. */
export async function revokedTokenPrune(db: Queryable, graceMs: number, batchSize: number): Promise<number> {
  return (await run(db, tokenPrune, [graceMs, batchSize])).length;
}

/** Deletes schedule runs older than `days`. Returns how many. */
export async function scheduleRunPrune(db: Queryable, days: number, batchSize: number): Promise<number> {
  return (await run(db, runPrune, [days, batchSize])).length;
}

/** Deletes up to `batchSize` events (spool.events) older than `days`. Returns how many. */
export async function eventPrune(db: Queryable, days: number, batchSize: number): Promise<number> {
  return (await run(db, eventPruneSql, [days, batchSize])).length;
}

/**
 * Deletes up to `batchSize` job_history rows of routine transitions (many
 * jobs of one queue each) older than their queue's longest retention window
 * (per queue overrides, else `defaultDays`). Returns how many.
 */
export async function historyPrune(db: Queryable, defaultDays: Record<RetainedStatus, number>, batchSize: number): Promise<number> {
  const statuses = Object.keys(defaultDays) as RetainedStatus[];
  return (await run(db, historyPruneSql, [statuses, statuses.map((s) => defaultDays[s]), batchSize])).length;
}
