import { LIMITS, type JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import type { FenceFailure } from './fence.js';
import { explainFenceFailures } from './fence.js';

const statement = sqlFile(import.meta.url, './job-fail-many.sql');

export interface FailItem {
  id: string;
  workerId: string;
  leaseId?: string | null;
  error: string;
  /** false sends the job straight to the dead-letter queue. Default true. */
  retryable?: boolean;
}

export type FailOutcome =
  | { id: string; ok: true; status: JobStatus; retryCount: number; willRetry: boolean; retryAt: Date | null }
  | { id: string; ok: false; reason: FenceFailure };

/**
 * Records a failure for each job processing under the caller's worker and
 * lease: back to pending after a backoff while retries remain, else
 * dead-lettered. Error text is cut to 4096 characters.
 */
export async function jobFailMany(db: Queryable, organizationId: string, items: FailItem[]): Promise<FailOutcome[]> {
  const valid = items.filter((item) => isUuid(item.id) && (item.leaseId == null || isUuid(item.leaseId)));
  const rows = valid.length === 0 ? [] : await run<{ id: string; status: JobStatus; retry_count: number; scheduled_at: Date | null }>(
    db,
    statement,
    [
      organizationId,
      valid.map((item) => item.id),
      valid.map((item) => item.workerId),
      valid.map((item) => item.leaseId ?? null),
      valid.map((item) => item.error.slice(0, LIMITS.errorMessageMax)),
      valid.map((item) => item.retryable ?? true),
    ],
  );
  const done = new Map(rows.map((row) => [row.id, row]));
  const reasons = await explainFenceFailures(db, organizationId, items.filter((item) => !done.has(item.id) && isUuid(item.id)));
  return items.map((item): FailOutcome => {
    const row = done.get(item.id);
    if (row) {
      const willRetry = row.status === 'pending';
      return { id: item.id, ok: true, status: row.status, retryCount: row.retry_count, willRetry, retryAt: willRetry ? row.scheduled_at : null };
    }
    return { id: item.id, ok: false, reason: reasons.get(item.id) ?? (isUuid(item.id) ? 'lease_mismatch' : 'not_found') };
  });
}
