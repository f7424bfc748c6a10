import type { Db, Queryable } from '../db.js';
import { run, sqlFile, transaction } from '../db.js';
import { jobReleaseWorker } from './maintenance.js';

const retentionDelete = sqlFile(import.meta.url, './job-retention-delete.sql');
const markOffline = sqlFile(import.meta.url, './worker-mark-offline.sql');
const tokenPrune = sqlFile(import.meta.url, './revoked-token-prune.sql');
const runPrune = sqlFile(import.meta.url, './schedule-run-prune.sql');
const eventPruneSql = sqlFile(import.meta.url, './event-prune.sql');
const historyPruneSql = sqlFile(import.meta.url, './history-prune.sql');
const partitionsPremake = sqlFile(import.meta.url, './jobs-done-partitions-premake.sql');
const partitionForget = sqlFile(import.meta.url, './jobs-done-partition-forget.sql');
const partitionDrop = sqlFile(import.meta.url, './jobs-done-partition-drop.sql');
const partitionEnsure = sqlFile(import.meta.url, './jobs-done-partition-ensure.sql');
const defaultDays = sqlFile(import.meta.url, './jobs-done-default-days.sql');

/** Statuses whose jobs retention deletes row by row: they can still move, so they stay in spool.jobs_live. */
export type LiveRetainedStatus = 'failed' | 'deadletter';

/**
 * Deletes up to `batchSize` jobs of the given statuses whose completed_at is
 * past their window (per queue: queue_config.settings.retention.<status>_days,
 * else spool.retention_defaults), with their history. Returns what it deleted.
 */
export async function jobRetentionDelete(db: Queryable, statuses: LiveRetainedStatus[], batchSize: number): Promise<{ jobs: number; history: number }> {
  const [row] = await run<{ jobs: number; history: number }>(db, retentionDelete, [statuses, batchSize]);
  return { jobs: row?.jobs ?? 0, history: row?.history ?? 0 };
}

/**
 * Makes the partitions of spool.jobs_done that jobs finishing in the next two
 * days purge on (migration 047), so that they never land in the default
 * partition, and the partitions of the days that did land there (which moves
 * them out). Returns how many it made.
 */
export async function jobsDonePartitionsPremake(db: Db): Promise<number> {
  const [row] = await run<{ made: number }>(db, partitionsPremake, []);
  let made = row?.made ?? 0;
  for (const { day } of await run<{ day: string }>(db, defaultDays, [])) {
    const [ensured] = await run<{ made: boolean }>(db, partitionEnsure, [day]);
    if (ensured?.made) made++;
  }
  return made;
}

/**
 * Retention of one day of finished jobs: the oldest partition of
 * spool.jobs_done whose purge day is over (every job in it is past its
 * window) goes with its jobs' history, progress, logs, keys and dead-letter
 * rows, in two transactions (migration 047 says why). Returns the partition,
 * how many jobs it held and how many history rows went, or null when none is
 * due.
 */
export async function jobsDonePartitionDropNext(db: Db): Promise<{ partition: string; jobs: number; history: number } | null> {
  const [row] = await run<{ partition_name: string; jobs: string; history: string }>(db, partitionForget, []);
  if (!row) return null;
  await run(db, partitionDrop, [row.partition_name]);
  return { partition: row.partition_name, jobs: Number(row.jobs), history: Number(row.history) };
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
  }, { retrySerializationFailure: true });
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
 * and one day (per queue overrides, else spool.retention_defaults). Returns
 * how many.
 */
export async function historyPrune(db: Queryable, batchSize: number): Promise<number> {
  return (await run(db, historyPruneSql, [batchSize])).length;
}
