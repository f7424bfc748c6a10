import { LIMITS, clamp } from '@spool/protocol';
import type { Queryable } from '../db.js';
import pg from 'pg';
import { run, sqlFile, transaction } from '../db.js';
import type { JobRow } from '../types.js';

const statement = sqlFile(import.meta.url, './job-claim.sql');
const cappedClaim = sqlFile(import.meta.url, './job-claim-capped.sql');
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
 * How long a claim floor (job-claim.sql, $6) is trusted. Within one priority
 * the floor skips what lies before it, where a job that became due again
 * (a retry whose backoff ended, a reclaimed lease, a scheduled job) can sit
 * while newer jobs keep every batch full; each queue is read from its start
 * at least this often, so such a job waits at most this much longer than
 * strict order would make it.
 */
export const CLAIM_FLOOR_TTL_MS = 1000;

/** Statements one fair claim may take to fill its batch. */
const FAIR_TURNS_MAX = 4;

/** Queues with a floor remembered per pool. */
const MAX_FLOORS = 10_000;

interface ClaimFloor {
  jobId: string;
  /** When the queue was last read from its start. */
  since: number;
}

/**
 * Per pool and queue: where the last full batch ended. A hint: any value is
 * safe. Not kept for a caller's own client, whose claims may be rolled back.
 */
const floorsByPool = new WeakMap<pg.Pool, Map<string, ClaimFloor>>();

function floorsOf(db: Queryable): Map<string, ClaimFloor> {
  if (!(db instanceof pg.Pool)) return new Map();
  let floors = floorsByPool.get(db);
  if (!floors) floorsByPool.set(db, (floors = new Map()));
  return floors;
}

/**
 * Per pool: queues last seen capped (a concurrency_limit, a rate_limit or a
 * concurrency_key_limit), least recently claimed first. Their claims go straight to the capped
 * form instead of first trying the uncapped one, which skips capped queues
 * and comes back empty. A hint: a queue no longer capped is found out by the
 * lock, and the claim falls back to the uncapped form.
 */
const cappedByPool = new WeakMap<pg.Pool, Set<string>>();

function cappedOf(db: Queryable): Set<string> {
  if (!(db instanceof pg.Pool)) return new Set();
  let capped = cappedByPool.get(db);
  if (!capped) cappedByPool.set(db, (capped = new Set()));
  return capped;
}

/** Claim order: higher priority, then older, then lower id. */
export function byClaimOrder(a: JobRow, b: JobRow): number {
  return b.priority - a.priority || a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** A claim's outcome: the jobs, and when a rate-limited queue has its next tokens. */
export interface ClaimOutcome {
  jobs: JobRow[];
  /**
   * Set when the queue's rate limit (not a lack of due jobs) cut the claim
   * short: how long until the bucket holds a batch's worth of tokens (the
   * claim's limit, or the burst when that is smaller). A long poll sleeps
   * this long instead of waiting for a notification that will not come.
   */
  retryAfterMs: number | null;
}

/**
 * Leases up to `limit` due jobs of one queue to `workerId`, highest priority
 * first, then oldest. Each returned row carries a new `lease_id`. Concurrent
 * callers never receive the same job. A paused queue yields nothing; a
 * queue with a `concurrency_limit` never has more processing jobs than that,
 * and one with a `rate_limit` never starts more than its token bucket holds.
 *
 * While a queue's batches come back full, the next claim starts reading
 * after the last one (the claim floor) instead of from the start of the
 * queue, past the index entries of every job claimed since the last vacuum;
 * see CLAIM_FLOOR_TTL_MS for what that costs in order.
 */
export async function jobClaim(db: Queryable, params: ClaimParams): Promise<JobRow[]> {
  return (await jobClaimOutcome(db, params)).jobs;
}

/** jobClaim, and when a rate-limited queue may be claimed again. */
export async function jobClaimOutcome(db: Queryable, params: ClaimParams): Promise<ClaimOutcome> {
  const limit = clamp(Math.trunc(params.limit), 1, LIMITS.claimLimitMax);
  const lease = clamp(Math.trunc(params.leaseSeconds), LIMITS.leaseSecondsMin, LIMITS.leaseSecondsMax);
  // Both statements (job-claim.sql, job-claim-capped.sql) take the same parameters.
  const claimOf = (n: number, floorJobId: string | null) =>
    [params.organizationId, params.queueName, n, params.workerId, lease, floorJobId];
  const key = `${params.organizationId}\u0000${params.queueName}`;
  const now = Date.now();

  const floors = floorsOf(db);
  const remembered = floors.get(key);
  const floor = remembered !== undefined && now - remembered.since <= CLAIM_FLOOR_TTL_MS ? remembered : null;
  /** Remembers where a full batch ended (and since when the queue was last read from its start). */
  const keepFloor = (claimed: JobRow[], n: number, readFromStart: boolean) => {
    floors.delete(key);
    if (claimed.length < n) return;
    floors.set(key, { jobId: claimed.reduce((last, job) => (byClaimOrder(job, last) > 0 ? job : last)).id, since: readFromStart ? now : floor!.since });
    // Queues that stop being claimed after a full batch would stay forever; the oldest go first.
    if (floors.size > MAX_FLOORS) floors.delete(floors.keys().next().value!);
  };

  // The capped form: one statement locks the queue's config row, claims and
  // keeps its books (job-claim-capped.sql); null when the queue is not capped (or
  // paused) after all. It reads past the floor and then, when short, up to
  // it; a fair queue's turns take no floor (the statement ignores it).
  // On the pool, the queue is locked first, in the claim's transaction, so that the claim's snapshot
  // follows the wait (queue-lock-capped.sql); a caller's own client runs the claim as it is.
  const cappedStatement = (values: unknown[]) => db instanceof pg.Pool
    ? transaction(db, async (client) => {
      await client.query({ name: lockCapped.name, text: lockCapped.text, values: [params.organizationId, params.queueName] });
      return run<ClaimRow>(client, cappedClaim, values);
    }, { retrySerializationFailure: true })
    : run<ClaimRow>(db, cappedClaim, values);
  const claimCapped = async (): Promise<ClaimOutcome | null> => {
    const rows = await cappedStatement(claimOf(limit, floor?.jobId ?? null));
    const facts = rows[0];
    if (!facts) return null;
    const n = facts.cap_reserved ?? limit;
    const fair = facts.cap_fairness !== null;
    let jobs = jobsOf(rows);
    // A fair turn gives each key its share of the batch; keys with fewer
    // jobs leave it short, and the next turns fill it (a rate-limited
    // queue's turns stop at the first: its tokens are what it took).
    for (let turn = 1; fair && facts.cap_reserved === null && jobs.length > 0 && jobs.length < n && turn < FAIR_TURNS_MAX; turn++) {
      const more = jobsOf(await cappedStatement(claimOf(n - jobs.length, null)));
      if (more.length === 0) break;
      jobs = [...jobs, ...more];
    }
    if (!fair && n > 0) keepFloor(jobs, n, floor === null || jobs.length < n);
    // Out of tokens: every token taken used (or none to take) and fewer than asked for.
    const tokenBound = facts.cap_reserved !== null && n < limit && jobs.length === n;
    return { jobs, retryAfterMs: tokenBound ? refillMs(facts, limit) : null };
  };
  const capped = cappedOf(db);
  if (capped.has(key)) {
    const outcome = await claimCapped();
    capped.delete(key);
    if (outcome) {
      capped.add(key);
      return outcome;
    }
  }

  // The uncapped form: its jobs, and when it took none, whether the queue is capped.
  const claimUncapped = async (n: number, floorJobId: string | null) => {
    const jobs: JobRow[] = [];
    let queueCapped = false;
    for (const { queue_capped, ...job } of await run<UncappedRow>(db, statement, claimOf(n, floorJobId))) {
      if (job.id === null) queueCapped = queue_capped;
      else jobs.push(job);
    }
    return { jobs, queueCapped };
  };
  let { jobs: claimed, queueCapped } = await claimUncapped(limit, floor?.jobId ?? null);
  let readFromStart = floor === null;
  if (!readFromStart && !queueCapped && claimed.length < limit) {
    // The queue ran dry after the floor: read it from the start for what
    // became due before the floor.
    const earlier = await claimUncapped(limit - claimed.length, null);
    if (earlier.jobs.length > 0) claimed = [...claimed, ...earlier.jobs].sort(byClaimOrder);
    queueCapped = earlier.queueCapped;
    readFromStart = true;
  }
  // Concurrent claims of one queue may finish out of order and leave the
  // floor up to a few batches behind; the next claim then passes those
  // batches' entries once more, which is bounded and not worth ordering.
  keepFloor(claimed, limit, readFromStart);
  if (claimed.length > 0) return { jobs: claimed, retryAfterMs: null };
  // Nothing claimable, or the queue is capped, which the uncapped form
  // leaves alone (and says so): a capped queue is claimed in a transaction.
  if (!queueCapped) return { jobs: [], retryAfterMs: null };
  const outcome = await claimCapped();
  if (outcome) {
    capped.add(key);
    if (capped.size > MAX_FLOORS) capped.delete(capped.values().next().value!);
  }
  return outcome ?? { jobs: [], retryAfterMs: null };
}

/** job-claim.sql's row: a claimed job, or (alone, job columns null) none and whether the queue is capped. */
type UncappedRow = JobRow & { queue_capped: boolean };

/**
 * job-claim-capped.sql's row: a claimed job and the `cap_` facts (the
 * bucket's are null for a queue without a rate limit); a claim that took
 * nothing returns one row of facts alone (job columns null).
 */
type ClaimRow = JobRow & {
  cap_fairness: string | null;
  /** Whole tokens the claim could take (at most its limit). */
  cap_reserved: number | null;
  /** What the bucket holds after the claim. */
  cap_tokens: number | null;
  cap_rate: number | null;
  cap_burst: number | null;
};

function jobsOf(rows: ClaimRow[]): JobRow[] {
  const jobs: JobRow[] = [];
  for (const row of rows) {
    if (row.id === null) continue;
    const { cap_fairness: _f, cap_reserved: _r, cap_tokens: _t, cap_rate: _a, cap_burst: _b, ...job } = row;
    jobs.push(job);
  }
  return jobs;
}

/** Milliseconds until a rate-limited queue's bucket holds a batch's worth of tokens again. */
function refillMs(facts: ClaimRow, limit: number): number {
  const wanted = Math.min(limit, facts.cap_burst!);
  return Math.max(1, Math.ceil(((wanted - facts.cap_tokens!) / facts.cap_rate!) * 1000));
}
