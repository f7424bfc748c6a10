import { LIMITS, type JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import type { FenceFailure } from './fence.js';
import { explainFenceFailures } from './fence.js';

const statement = sqlFile(import.meta.url, './job-snooze.sql');

export interface SnoozeParams {
  organizationId: string;
  id: string;
  workerId: string;
  leaseId?: string | null;
  /** Whole seconds, LIMITS.snoozeSecondsMin..snoozeSecondsMax (the API edge refuses others). */
  delaySecs: number;
}

export type SnoozeOutcome =
  /**
   * status `pending`: the job waits until scheduledAt, then is claimable
   * again; `cancelled`: a cancel had been requested, so the snooze ended it.
   */
  | { ok: true; status: JobStatus; retryCount: number; scheduledAt: Date | null }
  | { ok: false; reason: FenceFailure };

/**
 * Hands a job this worker holds back for a later attempt without counting
 * one: pending again after `delaySecs`, retry_count unchanged, history event
 * `snooze`. Fenced like fail; after the attempt's deadline `timed_out`.
 */
export async function jobSnooze(db: Queryable, params: SnoozeParams): Promise<SnoozeOutcome> {
  if (!Number.isInteger(params.delaySecs) || params.delaySecs < LIMITS.snoozeSecondsMin || params.delaySecs > LIMITS.snoozeSecondsMax) {
    throw new RangeError(`delaySecs must be an integer from ${LIMITS.snoozeSecondsMin} to ${LIMITS.snoozeSecondsMax}`);
  }
  if (!isUuid(params.id)) return { ok: false, reason: 'not_found' };
  if (params.leaseId != null && !isUuid(params.leaseId)) return { ok: false, reason: 'lease_mismatch' };
  const rows = await run<{ id: string; status: JobStatus; retry_count: number; scheduled_at: Date | null }>(
    db, statement, [params.organizationId, params.id, params.workerId, params.leaseId ?? null, params.delaySecs],
  );
  const row = rows[0];
  if (row) return { ok: true, status: row.status, retryCount: row.retry_count, scheduledAt: row.status === 'pending' ? row.scheduled_at : null };
  const reasons = await explainFenceFailures(db, params.organizationId, [params]);
  return { ok: false, reason: reasons.get(params.id) ?? 'not_found' };
}
