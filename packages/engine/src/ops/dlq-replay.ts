import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid, uuidv7 } from '../ids.js';
import { jobDependentsRecount } from './job-dependencies.js';

const create = sqlFile(import.meta.url, './dlq-replay-create.sql');
const get = sqlFile(import.meta.url, './dlq-replay-get.sql');
const list = sqlFile(import.meta.url, './dlq-replay-list.sql');
const cancel = sqlFile(import.meta.url, './dlq-replay-cancel.sql');
const batch = sqlFile(import.meta.url, './dlq-replay-batch.sql');
const due = sqlFile(import.meta.url, './dlq-replay-due.sql');
const failed = sqlFile(import.meta.url, './dlq-replay-error.sql');
const prune = sqlFile(import.meta.url, './dlq-replay-prune.sql');

/** Bounds of a paced replay (docs/jobs-api.md, "Paced DLQ replays"). */
export const DLQ_REPLAY_LIMITS = {
  /** Jobs one replay lists at most (`limit`, default and maximum). */
  maxJobs: 100_000,
  /** Explicit `job_ids` of one request. */
  jobIdsMax: 10_000,
  perSecondMin: 1,
  perSecondMax: 10_000,
  /** Length of `error_contains`. */
  errorContainsMax: 500,
  /** Replays an organization may have running at once. */
  runningMax: 10,
  /** Jobs per batch of an unpaced replay, and the most of any. */
  batchMax: 1000,
} as const;

export type DlqReplayStatus = 'running' | 'completed' | 'cancelled' | 'failed';
export const DLQ_REPLAY_STATUSES: readonly DlqReplayStatus[] = ['running', 'completed', 'cancelled', 'failed'];

/** A row of spool.dlq_replays (migration 036), with the database's clock at reading. */
export interface DlqReplayRow {
  organization_id: string;
  id: string;
  status: DlqReplayStatus;
  queue_name: string | null;
  job_ids_count: number | null;
  error_contains: string | null;
  created_after: Date | null;
  created_before: Date | null;
  max_jobs: number;
  queue_scope: string[] | null;
  edit_priority: number | null;
  edit_max_retries: number | null;
  edit_queue_name: string | null;
  per_second: number | null;
  batch_size: number;
  next_batch_at: Date;
  total: number;
  taken_upto: number;
  done: number;
  skipped: number;
  created_by: string;
  cancelled_by: string | null;
  error: string | null;
  error_count: number;
  created_at: Date;
  started_at: Date | null;
  updated_at: Date;
  finished_at: Date | null;
  /** now() of the statement that read the row: progress rates and ETAs are computed against it. */
  read_at: Date;
}

/**
 * Jobs per batch at a pace: about ten batches a second, so that the jobs
 * of a second are spread over it rather than sent at its start; unpaced,
 * the largest batch.
 */
export function dlqReplayBatchSize(perSecond: number | null | undefined): number {
  if (perSecond == null) return DLQ_REPLAY_LIMITS.batchMax;
  return Math.min(DLQ_REPLAY_LIMITS.batchMax, Math.max(1, Math.ceil(perSecond / 10)));
}

/** `text` as an ILIKE pattern matching any string that contains it. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export interface DlqReplayCreateParams {
  organizationId: string;
  queueName?: string | null;
  /** Explicit jobs (well-formed UUIDs); null or absent = any. */
  jobIds?: string[] | null;
  createdAfter?: Date | null;
  createdBefore?: Date | null;
  /** A substring of last_error (case-insensitive). */
  errorContains?: string | null;
  /** At most this many jobs, oldest first (default and maximum DLQ_REPLAY_LIMITS.maxJobs). */
  limit?: number | null;
  /** The caller's queues as LIKE patterns; null = every queue. */
  queues?: string[] | null;
  edits?: { priority?: number | null; maxRetries?: number | null; queueName?: string | null };
  perSecond?: number | null;
  /** Who asks (job_history.actor of every replayed job). */
  actor: string;
}

/**
 * Creates a replay and fixes the list of jobs it moves. Null when the
 * organization already has DLQ_REPLAY_LIMITS.runningMax replays running.
 */
export async function dlqReplayCreate(db: Queryable, params: DlqReplayCreateParams): Promise<DlqReplayRow | null> {
  const ids = params.jobIds == null ? null : [...new Set(params.jobIds.filter(isUuid).map((id) => id.toLowerCase()))];
  if (ids !== null && ids.length === 0) throw new Error('dlqReplayCreate: jobIds holds no well-formed id');
  const limit = Math.min(DLQ_REPLAY_LIMITS.maxJobs, Math.max(1, Math.trunc(params.limit ?? DLQ_REPLAY_LIMITS.maxJobs)));
  const rows = await run<DlqReplayRow>(db, create, [
    params.organizationId,
    uuidv7(),
    params.queueName ?? null,
    ids,
    params.createdAfter ?? null,
    params.createdBefore ?? null,
    params.errorContains ? containsPattern(params.errorContains) : null,
    limit,
    params.queues ?? null,
    params.errorContains || null,
    params.edits?.priority ?? null,
    params.edits?.maxRetries ?? null,
    params.edits?.queueName ?? null,
    params.perSecond ?? null,
    dlqReplayBatchSize(params.perSecond),
    params.actor,
    DLQ_REPLAY_LIMITS.runningMax,
  ]);
  return rows[0] ?? null;
}

/** One replay, if the caller's queues (LIKE patterns, null = all) reach it. */
export async function dlqReplayGet(db: Queryable, organizationId: string, id: string, queues: string[] | null): Promise<DlqReplayRow | null> {
  if (!isUuid(id)) return null;
  const rows = await run<DlqReplayRow>(db, get, [organizationId, id.toLowerCase(), queues]);
  return rows[0] ?? null;
}

/** The organization's replays the caller reaches, newest first. */
export async function dlqReplayList(db: Queryable, params: { organizationId: string; queues: string[] | null; status?: DlqReplayStatus | null; limit: number; offset: number }): Promise<DlqReplayRow[]> {
  return run<DlqReplayRow>(db, list, [params.organizationId, params.queues, params.status ?? null, params.limit, params.offset]);
}

/** Cancels a running replay; a finished one is returned unchanged (`cancelled` false); null = not found or out of reach. */
export async function dlqReplayCancel(db: Queryable, params: { organizationId: string; id: string; queues: string[] | null; actor: string }): Promise<{ replay: DlqReplayRow; cancelled: boolean } | null> {
  if (!isUuid(params.id)) return null;
  const rows = await run<DlqReplayRow & { cancelled: boolean }>(db, cancel, [params.organizationId, params.id.toLowerCase(), params.queues, params.actor]);
  const row = rows[0];
  if (!row) return null;
  const { cancelled, ...replay } = row;
  return { replay, cancelled };
}

/** A replay whose next batch is due (dlq-replay-due.sql). */
export interface DueReplay {
  organizationId: string;
  id: string;
  batchSize: number;
}

/** Up to `limit` due replays, and the ms until the next one not yet due (null: no other replay is running). */
export async function dlqReplayDue(db: Queryable, limit: number): Promise<{ due: DueReplay[]; nextInMs: number | null }> {
  const rows = await run<{ organization_id: string | null; id: string | null; batch_size: number | null; wait_ms: number | null }>(db, due, [limit]);
  const out: DueReplay[] = [];
  let nextInMs: number | null = null;
  for (const row of rows) {
    if (row.id && row.organization_id && row.batch_size) out.push({ organizationId: row.organization_id, id: row.id, batchSize: row.batch_size });
    else if (row.wait_ms !== null) nextInMs = Math.max(0, row.wait_ms);
  }
  return { due: out, nextInMs };
}

/**
 * Runs one batch of the replay if it is due and no other server is running
 * one of it. Null when nothing was done (not due, not running, or taken by
 * a neighbour); else the replay after the batch and how many jobs it moved.
 */
export async function dlqReplayBatch(db: Queryable, replay: DueReplay): Promise<(DlqReplayRow & { moved: number }) | null> {
  const rows = await run<DlqReplayRow & { moved: number; recount_ids: string[] | null }>(db, batch, [replay.organizationId, replay.id, replay.batchSize]);
  const row = rows[0];
  if (!row) return null;
  const { recount_ids: recount, ...done } = row;
  // As jobRetryMany does after its statement.
  if (recount) await jobDependentsRecount(db, replay.organizationId, recount);
  return done;
}

/** Records a failed batch; returns the replay's status afterwards (null: it was not running). */
export async function dlqReplayFailed(db: Queryable, replay: { organizationId: string; id: string }, error: string): Promise<DlqReplayStatus | null> {
  const rows = await run<{ status: DlqReplayStatus }>(db, failed, [replay.organizationId, replay.id, error]);
  return rows[0]?.status ?? null;
}

/** Deletes up to `limit` replays finished more than `days` ago; returns how many. */
export async function dlqReplayPrune(db: Queryable, days: number, limit: number): Promise<number> {
  const result = await db.query({ name: prune.name, text: prune.text, values: [days, limit] });
  return result.rowCount ?? 0;
}
