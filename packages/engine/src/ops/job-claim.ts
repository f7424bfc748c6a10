import { LIMITS, clamp } from '@spool/protocol';
import type { Queryable } from '../db.js';
import pg from 'pg';
import { run, sqlFile, transaction } from '../db.js';
import type { JobRow } from '../types.js';

const statement = sqlFile(import.meta.url, './job-claim.sql');
const isCapped = sqlFile(import.meta.url, './queue-is-capped.sql');
const lockCapped = sqlFile(import.meta.url, './queue-lock-capped.sql');

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
 * callers never receive the same job. A paused queue yields nothing; a
 * queue with a `concurrency_limit` never has more processing jobs than that.
 */
export async function jobClaim(db: Queryable, params: ClaimParams): Promise<JobRow[]> {
  const limit = clamp(Math.trunc(params.limit), 1, LIMITS.claimLimitMax);
  const lease = clamp(Math.trunc(params.leaseSeconds), LIMITS.leaseSecondsMin, LIMITS.leaseSecondsMax);
  const values = [params.organizationId, params.queueName, limit, params.workerId, lease];
  const claimed = await run<JobRow>(db, statement, [...values, false]);
  if (claimed.length > 0) return claimed;
  // Nothing claimable, or the queue has a concurrency_limit, which the fast
  // path leaves alone: capped queues pay for a transaction, others for one
  // primary-key probe when they come back empty.
  if ((await run(db, isCapped, [params.organizationId, params.queueName])).length === 0) return [];
  const capped = async (client: Queryable) => {
    const locked = await run(client, lockCapped, [params.organizationId, params.queueName]);
    return locked.length === 0 ? [] : run<JobRow>(client, statement, [...values, true]);
  };
  // A caller's own client is assumed to be in its transaction already.
  return db instanceof pg.Pool ? transaction(db, capped) : capped(db);
}
