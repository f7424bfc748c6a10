import { LIMITS, clamp } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import type { JobRow } from '../types.js';

const statement = sqlFile(import.meta.url, './job-claim.sql');

export interface ClaimParams {
  organizationId: string;
  queueName: string;
  workerId: string;
  /** 1..100; clamped. */
  limit: number;
  /** 5..3600; clamped. */
  leaseSeconds: number;
}

/**
 * Leases up to `limit` due jobs of one queue to `workerId`, highest priority
 * first, then oldest. Each returned row carries a new `lease_id`. Concurrent
 * callers never receive the same job. A paused queue yields nothing.
 */
export async function jobClaim(db: Queryable, params: ClaimParams): Promise<JobRow[]> {
  const limit = clamp(Math.trunc(params.limit), 1, LIMITS.claimLimitMax);
  const lease = clamp(Math.trunc(params.leaseSeconds), LIMITS.leaseSecondsMin, LIMITS.leaseSecondsMax);
  return run<JobRow>(db, statement, [params.organizationId, params.queueName, limit, params.workerId, lease]);
}
