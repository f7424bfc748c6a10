import type { JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const tail = sqlFile(import.meta.url, './history-tail.sql');
const rowIds = sqlFile(import.meta.url, './history-rows.sql');
const replay = sqlFile(import.meta.url, './history-replay.sql');

/**
 * Event ids of the job history: row id × this + the job's position in the
 * row (a row of routine transitions holds up to this many jobs' events,
 * migration 021). Readers follow rows (HistoryCursor) and number events.
 */
export const HISTORY_EVENTS_PER_ROW = 1024;

/** One job's event of a job_history row, with the job fields that realtime events and webhooks carry. */
export interface HistoryEvent {
  /** The event id (HISTORY_EVENTS_PER_ROW). */
  id: number;
  /** The job_history row that holds it. */
  log_id: number;
  organization_id: string;
  job_id: string;
  queue_name: string;
  event: string;
  from_status: JobStatus | null;
  to_status: JobStatus | null;
  worker_id: string | null;
  message: string | null;
  created_at: Date;
  /** Null when the job row no longer exists. */
  priority: number | null;
  retry_count: number | null;
  max_retries: number | null;
  started_at: Date | null;
  /** Only on 'complete' events. */
  result: unknown;
}

export interface HistoryTailResult {
  events: HistoryEvent[];
  xmin: bigint;
  xmax: bigint;
}

/** Rows after `after` (at most `limit`) plus the gap ids, with the snapshot's bounds. */
export async function historyTail(db: Queryable, after: number, gapIds: number[], limit: number): Promise<HistoryTailResult> {
  const rows = await run<HistoryEvent & { snapshot_xmin: string; snapshot_xmax: string }>(db, tail, [after, gapIds, limit]);
  const first = rows[0]!;
  return {
    events: rows.filter((row) => row.log_id !== null).map(({ snapshot_xmin: _a, snapshot_xmax: _b, ...event }) => event),
    xmin: BigInt(first.snapshot_xmin),
    xmax: BigInt(first.snapshot_xmax),
  };
}

/** The ids of the rows after `after` (at most `limit`), with the snapshot's bounds: a reader's starting point. */
export async function historyRowIds(db: Queryable, after: number, limit: number): Promise<{ ids: number[]; xmin: bigint; xmax: bigint }> {
  const [row] = await run<{ ids: number[]; snapshot_xmin: string; snapshot_xmax: string }>(db, rowIds, [after, limit]);
  return { ids: row!.ids.map(Number), xmin: BigInt(row!.snapshot_xmin), xmax: BigInt(row!.snapshot_xmax) };
}

export interface HistoryReplayParams {
  organizationId: string;
  after: number;
  upTo: number;
  ids: number[];
  jobId?: string | null;
  queueName?: string | null;
  limit: number;
}

/** One organization's job events with ids in (after, upTo] plus those of the rows `ids`, oldest first. */
export async function historyReplay(db: Queryable, params: HistoryReplayParams): Promise<HistoryEvent[]> {
  return run<HistoryEvent>(db, replay, [
    params.organizationId, params.after, params.upTo, params.ids, params.jobId ?? null, params.queueName ?? null, params.limit,
  ]);
}

/** The highest job_history row id (0 when empty). */
export async function historyMaxId(db: Queryable): Promise<number> {
  const result = await db.query<{ max: number | null }>('SELECT max(id) AS max FROM spool.job_history');
  return result.rows[0]?.max ?? 0;
}

const queueStats = sqlFile(import.meta.url, './realtime-queue-stats.sql');

/** A queue's counts for the realtime QueueStats event. */
export async function realtimeQueueStats(db: Queryable, organizationId: string, queueName: string): Promise<{ pending: number; processing: number; completed: number; failed: number }> {
  const rows = await run<{ pending: number; processing: number; completed: number; failed: number }>(db, queueStats, [organizationId, queueName]);
  return rows[0]!;
}

const jobState = sqlFile(import.meta.url, './realtime-job-state.sql');

/** A job's status with the event id of its latest history event, or null. */
export async function realtimeJobState(db: Queryable, organizationId: string, jobId: string): Promise<{ status: JobStatus; queue_name: string; last_history_id: number } | null> {
  const rows = await run<{ status: JobStatus; queue_name: string; last_history_id: number | null }>(db, jobState, [organizationId, jobId]);
  const row = rows[0];
  return row ? { ...row, last_history_id: row.last_history_id ?? 0 } : null;
}
