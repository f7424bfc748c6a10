import { LIMITS, clamp } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import type { FenceFailure } from './fence.js';
import { explainFenceFailures } from './fence.js';

const statement = sqlFile(import.meta.url, './job-heartbeat.sql');

export interface HeartbeatParams {
  organizationId: string;
  id: string;
  workerId: string;
  leaseId?: string | null;
  leaseSeconds: number;
}

export type HeartbeatOutcome =
  /** deadlineAt: when the attempt times out (an enforced timeout), else null; the lease never outlives it. */
  | { ok: true; leaseId: string; leaseExpiresAt: Date; cancelRequested: boolean; deadlineAt: Date | null }
  | { ok: false; reason: FenceFailure };

/**
 * Extends the caller's lease on a job, never past the attempt's deadline;
 * tells it when cancellation was requested. After the deadline the attempt
 * is over: `timed_out`.
 */
export async function jobHeartbeat(db: Queryable, params: HeartbeatParams): Promise<HeartbeatOutcome> {
  if (!isUuid(params.id)) return { ok: false, reason: 'not_found' };
  if (params.leaseId != null && !isUuid(params.leaseId)) return { ok: false, reason: 'lease_mismatch' };
  const lease = clamp(Math.trunc(params.leaseSeconds), LIMITS.leaseSecondsMin, LIMITS.leaseSecondsMax);
  const rows = await run<{ lease_id: string; lease_expires_at: Date; cancel_requested_at: Date | null; deadline_at: Date | null }>(
    db, statement, [params.organizationId, params.id, params.workerId, params.leaseId ?? null, lease],
  );
  const row = rows[0];
  if (row) return { ok: true, leaseId: row.lease_id, leaseExpiresAt: row.lease_expires_at, cancelRequested: row.cancel_requested_at !== null, deadlineAt: row.deadline_at };
  const reasons = await explainFenceFailures(db, params.organizationId, [params]);
  return { ok: false, reason: reasons.get(params.id) ?? 'not_found' };
}
