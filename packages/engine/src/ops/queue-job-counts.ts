import { JOB_STATUSES, type JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const statement = sqlFile(import.meta.url, './queue-job-counts.sql');

export interface QueueJobCounts {
  /** Every status, 0 when the queue has none in it. */
  byStatus: Record<JobStatus, number>;
  total: number;
  /** Age of the oldest pending job in ms; 0 when nothing is pending. */
  oldestPendingAgeMs: number;
}

/** Counts one queue's jobs by status. An unknown queue is all zeros. */
export async function queueJobCounts(db: Queryable, organizationId: string, queueName: string): Promise<QueueJobCounts> {
  const rows = await run<{ status: JobStatus; count: number; oldest_age_ms: number | null }>(db, statement, [organizationId, queueName]);
  const byStatus = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
  let total = 0;
  let oldestPendingAgeMs = 0;
  for (const row of rows) {
    byStatus[row.status] = row.count;
    total += row.count;
    if (row.oldest_age_ms !== null) oldestPendingAgeMs = row.oldest_age_ms;
  }
  return { byStatus, total, oldestPendingAgeMs };
}
