import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

const leaseState = sqlFile(import.meta.url, './job-lease-state.sql');

/**
 * Why a fenced operation (complete, fail, heartbeat, snooze, progress, log)
 * changed nothing.
 * `timed_out`: the attempt outlived its deadline (an enforced timeout,
 * migration 026); the caller's lease is over like a lost one's.
 */
export type FenceFailure = 'not_found' | 'not_owned' | 'lease_mismatch' | 'timed_out';

export interface FenceClaim {
  id: string;
  workerId: string;
  leaseId?: string | null | undefined;
}

/**
 * Explains each refused item, by the fence the statements apply
 * (spool.job_fence, migration 042; ops/job-lease-state.sql). A presented
 * lease that is not the job's current one is `lease_mismatch` (the caller
 * lost the job: 409 LEASE_EXPIRED); a job that is not processing or belongs
 * to another worker is `not_owned`; a missing one is `not_found`. An attempt
 * of the caller's that timed out is `timed_out`: the job still holds that
 * lease past its deadline, or the lease the caller presents is one the
 * reaper ended as timed out. (Without a lease_id, an attempt the reaper
 * already ended cannot be told from any other lost job: `not_owned`.)
 */
export async function explainFenceFailures(db: Queryable, organizationId: string, claims: FenceClaim[]): Promise<Map<string, FenceFailure>> {
  const out = new Map<string, FenceFailure>();
  if (claims.length === 0) return out;
  const rows = await run<{ id: string; outcome: FenceFailure | 'held' }>(db, leaseState, [
    organizationId,
    claims.map((c) => c.id),
    claims.map((c) => c.workerId),
    // A lease id that is no uuid is no job's lease: the nil uuid never is one either.
    claims.map((c) => (c.leaseId == null ? null : isUuid(c.leaseId) ? c.leaseId : NIL_UUID)),
  ]);
  // `held`: the job was taken back between the refusing statement and this
  // one (rescued and claimed again by the same worker id): that lease belongs
  // to the new claim, not to the refused call.
  rows.forEach((row, i) => out.set(claims[i]!.id, row.outcome === 'held' ? 'not_owned' : row.outcome));
  return out;
}
