import pg from 'pg';
import { LIMITS, type JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile, transaction } from '../db.js';
import { jobDependenciesAdd } from './job-dependencies.js';
import { jobInsertMany, type InsertedJob, type KeyOutcome, type NewJob } from './job-insert-many.js';

const lockKeys = sqlFile(import.meta.url, './job-key-lock.sql');
const resolveKeys = sqlFile(import.meta.url, './job-key-resolve.sql');

interface Resolved {
  ord: number;
  outcome: KeyOutcome;
  job_id: string | null;
  status: JobStatus | null;
  run_at: Date | null;
  after_job_id: string | null;
}

/**
 * The one way jobs are enqueued: a batch without job keys is one
 * jobInsertMany statement, as before; a batch with keys applies their
 * policies (docs/jobs-api.md, "Job keys") in a transaction (the caller's,
 * when `db` is a client, else its own): the keys' locks, then per key what
 * job-key-resolve.sql decides, then the jobs to create through
 * jobInsertMany. Results come in input order.
 *
 * Several items of one key in a batch behave as if enqueued one after
 * another: the n-th of each key goes in the n-th round of statements, which
 * sees the rounds before it. A batch has at most LIMITS.bulkJobsMax items,
 * so the rounds are bounded, and a batch of distinct keys takes one. Items
 * whose outcome the key's first item decides take no round of their own
 * (see `followsFirst`).
 */
export async function jobEnqueue(db: Queryable, jobs: NewJob[]): Promise<InsertedJob[]> {
  if (!jobs.some((job) => job.jobKey)) return jobInsertMany(db, jobs);
  return db instanceof pg.Pool ? transaction(db, (client) => enqueueKeyed(client, jobs), { retrySerializationFailure: true }) : enqueueKeyed(db, jobs);
}

const keyOf = (job: NewJob) => `${job.organizationId}\u0000${job.queueName}\u0000${job.jobKey!.key}`;

async function enqueueKeyed(client: pg.PoolClient | pg.Client, jobs: NewJob[]): Promise<InsertedJob[]> {
  const results: InsertedJob[] = new Array(jobs.length);
  const keyed = jobs.flatMap((job, index) => (job.jobKey ? [index] : []));
  await run(client, lockKeys, [keyed.map((i) => jobs[i]!.organizationId), keyed.map((i) => jobs[i]!.queueName), keyed.map((i) => jobs[i]!.jobKey!.key)]);

  const plain = jobs.flatMap((job, index) => (job.jobKey ? [] : [index]));
  if (plain.length > 0) {
    const inserted = await jobInsertMany(client, plain.map((i) => jobs[i]!));
    plain.forEach((index, n) => (results[index] = inserted[n]!));
  }

  const byKey = new Map<string, number[]>();
  for (const index of keyed) {
    const key = keyOf(jobs[index]!);
    const items = byKey.get(key);
    if (items) items.push(index);
    else byKey.set(key, [index]);
  }
  // Each follower resolves to its key's first item's answer.
  const leaderOf = new Map<number, number>();
  for (const items of byKey.values()) {
    if (items.length > 1 && followsFirst(items.map((i) => jobs[i]!))) for (const i of items.slice(1)) leaderOf.set(i, items[0]!);
  }

  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  for (const index of keyed) {
    if (leaderOf.has(index)) continue;
    const key = keyOf(jobs[index]!);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (rounds[round] ??= []).push(index);
  }
  for (const round of rounds) await enqueueRound(client, jobs, round, results);
  for (const [index, leader] of leaderOf) {
    const first = results[leader]!;
    results[index] = { id: first.id, created: false, status: first.status, keyOutcome: jobs[index]!.jobKey!.mode === 'dedupe' ? 'deduplicated' : 'throttled' };
  }
  return results;
}

/**
 * Whether the items of one key after its first (all of `items` but the
 * first) would each, enqueued alone right after it, only name the job that
 * the first left standing: then they need no statements of their own. So it
 * is when every item is a dedupe, or every item a throttle of the same
 * window, and none has an idempotency key:
 *  - the first item leaves the key a job: the one it found (dedupe: waiting
 *    or running; throttle: created within the window), or the one it
 *    created (created now, so within any window), never refused for an
 *    idempotency key it does not have;
 *  - the next finds that job the same way (the key's lock is held, so no
 *    other enqueue of it comes between, and now() is the transaction's),
 *    and a dedupe or throttle changes nothing: it answers that job, not
 *    created, with its status. So does every one after it.
 * An idempotency key is checked before the key's policy, so an item with one
 * may resolve elsewhere (and a first item that does leaves the key without
 * its job); a debounce or replace changes the job it finds, with a history
 * row each: those keep one round per item.
 */
function followsFirst(items: NewJob[]): boolean {
  const first = items[0]!.jobKey!;
  if (first.mode !== 'dedupe' && first.mode !== 'throttle') return false;
  return items.every((job) => job.idempotencyKey == null && job.jobKey!.mode === first.mode
    && (first.mode === 'dedupe' || (typeof first.windowSecs === 'number' && first.windowSecs > 0 && job.jobKey!.windowSecs === first.windowSecs)));
}

async function enqueueRound(client: pg.PoolClient | pg.Client, jobs: NewJob[], round: number[], results: InsertedJob[]): Promise<void> {
  const items = round.map((index) => jobs[index]!);
  const column = <T>(pick: (job: NewJob) => T) => items.map(pick);
  const resolved = await run<Resolved>(client, resolveKeys, [
    round.map((_, n) => n),
    column((j) => j.organizationId),
    column((j) => j.queueName),
    column((j) => j.jobKey!.key),
    column((j) => j.jobKey!.mode),
    column((j) => j.jobKey!.windowSecs ?? null),
    column((j) => j.jobKey!.maxWaitSecs ?? null),
    column((j) => j.idempotencyKey ?? null),
    column((j) => JSON.stringify(j.payload ?? null)),
    column((j) => j.priority ?? null),
    column((j) => j.maxRetries ?? null),
    column((j) => j.timeoutSeconds ?? null),
    column((j) => j.scheduledAt ?? null),
    column((j) => j.expiresAt ?? null),
    column((j) => (j.tags == null ? null : JSON.stringify(j.tags))),
    column((j) => j.completionWebhook ?? null),
    column((j) => j.concurrencyKey ?? null),
    column((j) => j.fairnessKey ?? null),
    column((j) => j.traceparent ?? null),
    column((j) => j.tracestate ?? null),
    LIMITS.maxRetriesDefault,
    LIMITS.timeoutSecondsDefault,
    column((j) => j.actor ?? null),
  ]);
  const creating: { n: number; row: Resolved }[] = [];
  for (const row of resolved) {
    if (row.outcome === 'created') creating.push({ n: row.ord, row });
    else results[round[row.ord]!] = { id: row.job_id!, created: false, status: row.status!, keyOutcome: row.outcome };
  }
  if (creating.length === 0) return;
  const inserted = await jobInsertMany(client, creating.map(({ n, row }) => ({ ...items[n]!, scheduledAt: row.run_at ?? items[n]!.scheduledAt ?? null })));
  for (const [i, { n, row }] of creating.entries()) {
    const job = inserted[i]!;
    // created false: a concurrent enqueue without a key took the idempotency key first.
    results[round[n]!] = { ...job, keyOutcome: job.created ? 'created' : 'deduplicated' };
    // replace while the key's job runs: the new one waits for it to end, however it ends.
    if (job.created && row.after_job_id) {
      await jobDependenciesAdd(client, { organizationId: items[n]!.organizationId, jobId: job.id, dependsOn: [row.after_job_id], onParentFailure: 'continue' });
    }
  }
}
