import { LIMITS, clamp, type JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import type { JobRow } from '../types.js';
import { jobDependentsRecount } from './job-dependencies.js';

const statement = sqlFile(import.meta.url, './job-retry-many.sql');

export interface RetryParams {
  organizationId: string;
  /** Explicit jobs; when absent, the oldest `limit` matching jobs. */
  ids?: string[] | null;
  queueName?: string | null;
  limit?: number;
  /** DLQ replay resets retry_count to 0; a manual retry counts one more attempt. */
  resetRetryCount: boolean;
  /** Which statuses may be retried. */
  from: readonly JobStatus[];
  /** The caller's queues as LIKE patterns; null or absent = every queue. */
  queues?: string[] | null;
  /** Who asked (job_history.actor); null or absent when unknown. */
  actor?: string | null;
}

/** Moves failed/dead-lettered jobs back to pending, claimable at once. Returns the updated rows. */
export async function jobRetryMany(db: Queryable, params: RetryParams): Promise<JobRow[]> {
  const ids = params.ids == null ? null : params.ids.filter(isUuid);
  if (ids !== null && ids.length === 0) return [];
  const limit = clamp(Math.trunc(params.limit ?? ids?.length ?? LIMITS.claimLimitMax), 1, 10_000);
  const rows = await run<JobRow & { recount: boolean }>(db, statement, [params.organizationId, ids, params.queueName ?? null, limit, params.resetRetryCount, params.from, params.queues ?? null, params.actor ?? null]);
  // Rare: a dependency was added to one of these jobs while it was being
  // retried; the statement could not see that edge (see the SQL).
  await jobDependentsRecount(db, params.organizationId, rows.filter((row) => row.recount).map((row) => row.id));
  return rows.map(({ recount: _recount, ...row }) => row);
}
