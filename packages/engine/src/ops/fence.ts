import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const leaseState = sqlFile(import.meta.url, './job-lease-state.sql');

/**
 * Why a fenced operation (complete, fail, heartbeat) changed nothing.
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
 * Explains each refused item. A presented lease that is not the job's
 * current one is `lease_mismatch` (the caller lost the job: 409
 * LEASE_EXPIRED); a job that is not processing or belongs to another worker
 * is `not_owned`; a missing one is `not_found`. An attempt of the caller's
 * that timed out is `timed_out`: the job still holds that lease past its
 * deadline, or the lease the caller presents is one the reaper ended as
 * timed out. (Without a lease_id, an attempt the reaper already ended cannot
 * be told from any other lost job: `not_owned`.)
 */
export async function explainFenceFailures(db: Queryable, organizationId: string, claims: FenceClaim[]): Promise<Map<string, FenceFailure>> {
  const out = new Map<string, FenceFailure>();
  if (claims.length === 0) return out;
  const rows = await run<{ id: string; status: string; assigned_worker_id: string | null; lease_id: string | null; past_deadline: boolean; timed_out_leases: string[] }>(
    db, leaseState, [organizationId, claims.map((c) => c.id)],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  for (const claim of claims) {
    const row = byId.get(claim.id);
    if (!row) out.set(claim.id, 'not_found');
    else if (claim.leaseId != null && row.timed_out_leases.includes(claim.leaseId)) out.set(claim.id, 'timed_out');
    else if (row.past_deadline && row.assigned_worker_id === claim.workerId && (claim.leaseId == null || row.lease_id === claim.leaseId)) out.set(claim.id, 'timed_out');
    else if (claim.leaseId != null && row.lease_id !== claim.leaseId) out.set(claim.id, 'lease_mismatch');
    else out.set(claim.id, 'not_owned');
  }
  return out;
}
