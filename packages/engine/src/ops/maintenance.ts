import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const rescue = sqlFile(import.meta.url, './job-rescue-expired.sql');
const expire = sqlFile(import.meta.url, './job-expire.sql');
const promote = sqlFile(import.meta.url, './job-promote-scheduled.sql');
const nextScheduled = sqlFile(import.meta.url, './job-next-scheduled.sql');
const release = sqlFile(import.meta.url, './job-release-worker.sql');

/** Returns expired leases' jobs to pending (or the DLQ). Returns how many were rescued. */
export async function jobRescueExpired(db: Queryable, batchSize: number): Promise<{ rescued: number; deadlettered: number }> {
  const rows = await run<{ status: string }>(db, rescue, [batchSize]);
  return { rescued: rows.length, deadlettered: rows.filter((row) => row.status === 'deadletter').length };
}

/** Ends jobs whose expires_at passed before they started. Returns how many. */
export async function jobExpire(db: Queryable, batchSize: number): Promise<number> {
  return (await run(db, expire, [batchSize])).length;
}

/** Makes due scheduled jobs pending. Returns how many. */
export async function jobPromoteScheduled(db: Queryable, batchSize: number): Promise<number> {
  const rows = await run<{ promoted: number }>(db, promote, [batchSize]);
  return rows[0]?.promoted ?? 0;
}

/** The earliest scheduled_at still waiting, or null. */
export async function jobNextScheduledAt(db: Queryable): Promise<Date | null> {
  const rows = await run<{ next_at: Date | null }>(db, nextScheduled, []);
  return rows[0]?.next_at ?? null;
}

/** Gives a worker's processing jobs back to pending without counting a retry. */
export async function jobReleaseWorker(db: Queryable, organizationId: string, workerId: string, reason: string): Promise<number> {
  return (await run(db, release, [organizationId, workerId, reason])).length;
}
