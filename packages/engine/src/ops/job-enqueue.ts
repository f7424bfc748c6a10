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
 * so the rounds are bounded, and a batch of distinct keys takes one.
 */
export async function jobEnqueue(db: Queryable, jobs: NewJob[]): Promise<InsertedJob[]> {
  if (!jobs.some((job) => job.jobKey)) return jobInsertMany(db, jobs);
  return db instanceof pg.Pool ? transaction(db, (client) => enqueueKeyed(client, jobs)) : enqueueKeyed(db, jobs);
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

  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  for (const index of keyed) {
    const key = keyOf(jobs[index]!);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (rounds[round] ??= []).push(index);
  }
  for (const round of rounds) await enqueueRound(client, jobs, round, results);
  return results;
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
