import { LIMITS, type JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { uuidv7 } from '../ids.js';

const statement = sqlFile(import.meta.url, './job-insert-many.sql');

export interface NewJob {
  organizationId: string;
  queueName: string;
  payload: unknown;
  priority?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
  scheduledAt?: Date | null;
  expiresAt?: Date | null;
  idempotencyKey?: string | null;
  tags?: Record<string, unknown> | null;
  parentJobId?: string | null;
  completionWebhook?: string | null;
  /** W3C trace context of the enqueuer, validated by the caller (protocol trace-context.ts). */
  traceparent?: string | null;
  tracestate?: string | null;
  /** Counts against the queue's concurrency_key_limit while processing. */
  concurrencyKey?: string | null;
  /** The key whose turn the job waits for in a queue with fair share. */
  fairnessKey?: string | null;
  /** A key policy (dedupe, debounce, throttle, replace): enqueue through jobEnqueue, which applies it. */
  jobKey?: JobKey | null;
  /** Who enqueued (history `actor`), recorded when a key policy changes a standing job. */
  actor?: string | null;
}

export type JobKeyMode = 'dedupe' | 'debounce' | 'throttle' | 'replace';

/** What an enqueue with a job_key did (docs/jobs-api.md, "Job keys"). */
export type KeyOutcome = 'created' | 'deduplicated' | 'debounced' | 'throttled' | 'replaced';

export interface JobKey {
  key: string;
  mode: JobKeyMode;
  /** debounce: the quiet time before the job runs; throttle: one job per this many seconds. */
  windowSecs?: number | null;
  /** debounce: the job runs at most this long after the first enqueue of its series. */
  maxWaitSecs?: number | null;
}

export interface InsertedJob {
  id: string;
  created: boolean;
  status: JobStatus;
  /** Set for a job enqueued with a job_key. */
  keyOutcome?: KeyOutcome;
}

/**
 * Inserts jobs in one statement and returns one result per input, in input
 * order. A job whose (organization, idempotency key) already exists, in the
 * table or earlier in this batch, resolves to that job with `created: false`.
 */
export async function jobInsertMany(db: Queryable, jobs: NewJob[]): Promise<InsertedJob[]> {
  if (jobs.length === 0) return [];
  const firstByKey = new Map<string, number>();
  const sent: { job: NewJob; id: string; index: number }[] = [];
  const aliasOf: (number | undefined)[] = [];
  jobs.forEach((job, index) => {
    if (job.idempotencyKey) {
      const key = `${job.organizationId}\u0000${job.idempotencyKey}`;
      const first = firstByKey.get(key);
      if (first !== undefined) {
        aliasOf[index] = first;
        return;
      }
      firstByKey.set(key, index);
    }
    sent.push({ job, id: uuidv7(), index });
  });

  const rows = await run<{ id: string; organization_id: string; idempotency_key: string | null; status: JobStatus; created: boolean }>(
    db,
    statement,
    [
      sent.map((s) => s.id),
      sent.map((s) => s.job.organizationId),
      sent.map((s) => s.job.queueName),
      sent.map((s) => JSON.stringify(s.job.payload ?? null)),
      sent.map((s) => s.job.priority ?? 0),
      sent.map((s) => s.job.maxRetries ?? null),
      sent.map((s) => s.job.timeoutSeconds ?? null),
      sent.map((s) => s.job.scheduledAt ?? null),
      sent.map((s) => s.job.expiresAt ?? null),
      sent.map((s) => s.job.idempotencyKey ?? null),
      sent.map((s) => (s.job.tags == null ? null : JSON.stringify(s.job.tags))),
      sent.map((s) => s.job.parentJobId ?? null),
      sent.map((s) => s.job.completionWebhook ?? null),
      LIMITS.maxRetriesDefault,
      LIMITS.timeoutSecondsDefault,
      sent.map((s) => s.job.traceparent ?? null),
      sent.map((s) => s.job.tracestate ?? null),
      sent.map((s) => s.job.concurrencyKey ?? null),
      sent.map((s) => s.job.fairnessKey ?? null),
      sent.map((s) => s.job.jobKey?.key ?? null),
      sent.map((s) => s.job.jobKey?.mode ?? null),
    ],
  );

  const byId = new Map(rows.map((row) => [row.id, row]));
  const byKey = new Map(rows.filter((row) => row.idempotency_key !== null).map((row) => [`${row.organization_id}\u0000${row.idempotency_key}`, row]));
  const results: InsertedJob[] = new Array(jobs.length);
  for (const s of sent) {
    const row = s.job.idempotencyKey ? byKey.get(`${s.job.organizationId}\u0000${s.job.idempotencyKey}`) : byId.get(s.id);
    if (!row) throw new Error(`job insert returned no row for input ${s.index}`);
    results[s.index] = { id: row.id, created: row.created, status: row.status };
  }
  aliasOf.forEach((first, index) => {
    if (first === undefined) return;
    const original = results[first]!;
    results[index] = { id: original.id, created: false, status: original.status };
  });
  return results;
}
