import { LIMITS, ValidationError, clamp } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import type { JobRow } from '../types.js';
import { byClaimOrder, jobClaimOutcome, type ClaimOutcome } from './job-claim.js';

const statement = sqlFile(import.meta.url, './job-claim-queues.sql');

export interface ClaimQueuesParams {
  organizationId: string;
  /** 1..LIMITS.claimQueuesMax queue names; repeats count once. */
  queueNames: readonly string[];
  workerId: string;
  /** 1..100; clamped. */
  limit: number;
  /** 5..3600; clamped. */
  leaseSeconds: number;
}

/**
 * Statements of job-claim-queues.sql one claim may run: the first, and
 * top-ups after queues that gave less than their share (a capped queue's
 * limits, concurrent claimers), each without the queues that came up short.
 */
const ROUNDS_MAX = 3;

/** job-claim-queues.sql's rows: a claimed job, or (share_queue set, job columns NULL) a queue's share. */
type Row = JobRow & { share_queue: string | null; share: number | null; share_capped: boolean | null; retry_ms: number | null };

/**
 * Leases up to `limit` due jobs across several queues to `workerId`: the
 * best of all of them in claim order (higher priority first across every
 * queue, then older), each queue's pause, concurrency_limit, rate_limit,
 * concurrency keys and fair share holding as for a claim of that queue
 * alone. Concurrent callers, multi-queue or not, never receive the same job.
 *
 * One statement (job-claim-queues.sql) reads each queue's first candidates,
 * merges them, and claims the uncapped queues' part of the batch; each capped
 * queue's part is claimed by the capped claim of jobClaimOutcome (its config
 * row locked), so its limits are kept by the same code whichever way it is
 * claimed. When a queue gives less than its part (a capped queue's keys are
 * full, another claimer took its jobs), the rest of the batch is offered to
 * the other queues, at most ROUNDS_MAX statements in all. One queue is a
 * plain jobClaimOutcome (its statements and plan unchanged).
 *
 * `retryAfterMs`: the soonest time a rate-limited queue out of tokens has
 * tokens again (for a long poll that found nothing), else null.
 */
export async function jobClaimQueuesOutcome(db: Queryable, params: ClaimQueuesParams): Promise<ClaimOutcome> {
  const names = [...new Set(params.queueNames)];
  if (names.length === 0 || names.length > LIMITS.claimQueuesMax) {
    throw new ValidationError(`queue_names must name 1 to ${LIMITS.claimQueuesMax} queues`, { field: 'queue_names' });
  }
  const limit = clamp(Math.trunc(params.limit), 1, LIMITS.claimLimitMax);
  const lease = clamp(Math.trunc(params.leaseSeconds), LIMITS.leaseSecondsMin, LIMITS.leaseSecondsMax);
  const single = (queueName: string, n: number) =>
    jobClaimOutcome(db, { organizationId: params.organizationId, queueName, workerId: params.workerId, limit: n, leaseSeconds: lease });
  if (names.length === 1) return single(names[0]!, limit);

  /** Each statement's jobs, in its claim order. */
  const batches: JobRow[][] = [];
  let claimedCount = 0;
  let retryAfterMs: number | null = null;
  const soonest = (ms: number | null) => {
    if (ms !== null) retryAfterMs = retryAfterMs === null ? ms : Math.min(retryAfterMs, ms);
  };
  let remaining = names;
  for (let round = 0; round < ROUNDS_MAX && remaining.length > 0; round++) {
    const want = limit - claimedCount;
    const rows = await run<Row>(db, statement, [params.organizationId, remaining, want, params.workerId, lease]);
    const fromQueue = new Map<string, number>();
    const jobs: JobRow[] = [];
    const shares: Row[] = [];
    for (const row of rows) {
      if (row.share_queue !== null) {
        shares.push(row);
        continue;
      }
      const { share_queue: _q, share: _s, share_capped: _c, retry_ms: _r, ...job } = row;
      jobs.push(job);
      fromQueue.set(job.queue_name, (fromQueue.get(job.queue_name) ?? 0) + 1);
    }
    batches.push(jobs);
    claimedCount += jobs.length;
    /** Jobs the merge gave out, and the queues that gave less than their part (all they could). */
    let given = 0;
    const spent = new Set<string>();
    for (const share of shares) {
      soonest(share.retry_ms);
      const queue = share.share_queue!;
      const n = share.share!;
      if (n === 0) continue;
      given += n;
      if (!share.share_capped) {
        if ((fromQueue.get(queue) ?? 0) < n) spent.add(queue);
        continue;
      }
      const outcome = await single(queue, n);
      batches.push(outcome.jobs);
      claimedCount += outcome.jobs.length;
      soonest(outcome.retryAfterMs);
      if (outcome.jobs.length < n) spent.add(queue);
    }
    // Fewer given out than wanted: every queue's candidates were in the
    // merge already, and nothing is left below the cut to offer.
    if (claimedCount >= limit || given < want || spent.size === 0) break;
    remaining = remaining.filter((queue) => !spent.has(queue));
  }
  return { jobs: mergeInClaimOrder(batches.filter((batch) => batch.length > 0)), retryAfterMs };
}

/**
 * Merges batches each in claim order (as their statements ordered them, to
 * the microsecond). Across batches, byClaimOrder compares times as Dates:
 * jobs of the same millisecond from different statements go by id.
 */
function mergeInClaimOrder(batches: JobRow[][]): JobRow[] {
  if (batches.length <= 1) return batches[0] ?? [];
  const next = batches.map(() => 0);
  const out: JobRow[] = [];
  for (;;) {
    let best = -1;
    for (let b = 0; b < batches.length; b++) {
      const job = batches[b]![next[b]!];
      if (job !== undefined && (best === -1 || byClaimOrder(job, batches[best]![next[best]!]!) < 0)) best = b;
    }
    if (best === -1) return out;
    out.push(batches[best]![next[best]!]!);
    next[best]! += 1;
  }
}
