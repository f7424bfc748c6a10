import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import type { FenceFailure } from './fence.js';
import { explainFenceFailures } from './fence.js';

const progressSet = sqlFile(import.meta.url, './job-progress-set.sql');
const progressGet = sqlFile(import.meta.url, './job-progress-get.sql');
const logAppend = sqlFile(import.meta.url, './job-log-append.sql');
const logList = sqlFile(import.meta.url, './job-log-list.sql');

/** The bounds of one job's log (docs/jobs-api.md "Progress and logs"). */
export const JOB_LOG_LIMITS = {
  /** Lines kept per job: older ones are dropped as new ones arrive. */
  linesPerJob: 1000,
  /** UTF-8 bytes of lines kept per job, likewise. */
  bytesPerJob: 256 * 1024,
  lineChars: 4096,
  linesPerRequest: 100,
  messageChars: 1000,
  metadataBytes: 16 * 1024,
} as const;

export interface JobProgress {
  job_id: string;
  percent: number | null;
  message: string | null;
  metadata: unknown;
  updated_at: Date;
}

interface Fenced {
  organizationId: string;
  id: string;
  workerId: string;
  leaseId?: string | null;
}

export interface ProgressParams extends Fenced {
  /** `undefined` keeps the stored value, `null` clears it. */
  percent?: number | null;
  message?: string | null;
  metadata?: unknown;
}

export type ProgressOutcome = { ok: true; progress: JobProgress & { queue_name: string } } | { ok: false; reason: FenceFailure };

async function refused(db: Queryable, params: Fenced): Promise<{ ok: false; reason: FenceFailure }> {
  const reasons = await explainFenceFailures(db, params.organizationId, [params]);
  return { ok: false, reason: reasons.get(params.id) ?? 'not_found' };
}

function precheck(params: Fenced): { ok: false; reason: FenceFailure } | null {
  if (!isUuid(params.id)) return { ok: false, reason: 'not_found' };
  if (params.leaseId != null && !isUuid(params.leaseId)) return { ok: false, reason: 'lease_mismatch' };
  return null;
}

/** Records a job's progress for the worker holding it (fenced like a heartbeat) and announces job.progress. */
export async function jobProgressSet(db: Queryable, params: ProgressParams): Promise<ProgressOutcome> {
  const early = precheck(params);
  if (early) return early;
  const metadata = params.metadata === undefined || params.metadata === null ? null : JSON.stringify(params.metadata);
  const rows = await run<JobProgress & { queue_name: string }>(db, progressSet, [
    params.organizationId, params.id, params.workerId, params.leaseId ?? null,
    params.percent ?? null, params.message ?? null, metadata,
    params.percent !== undefined, params.message !== undefined, params.metadata !== undefined,
  ]);
  const row = rows[0];
  return row ? { ok: true, progress: row } : refused(db, params);
}

/** The progress a job's worker last reported, or null. */
export async function jobProgressGet(db: Queryable, organizationId: string, id: string): Promise<JobProgress | null> {
  if (!isUuid(id)) return null;
  return (await run<JobProgress>(db, progressGet, [organizationId, id]))[0] ?? null;
}

export interface LogAppendParams extends Fenced {
  lines: string[];
}

export type LogAppendOutcome =
  | { ok: true; written: number; dropped: number; lastSeq: number | null }
  | { ok: false; reason: FenceFailure };

/**
 * Appends lines to a job's log for the worker holding it (fenced like a
 * heartbeat), keeping the newest within JOB_LOG_LIMITS, and announces
 * job.log. `dropped` counts older lines deleted and new ones not kept.
 */
export async function jobLogAppend(db: Queryable, params: LogAppendParams): Promise<LogAppendOutcome> {
  const early = precheck(params);
  if (early) return early;
  const rows = await run<{ written: number; dropped: number; last_seq: string | null }>(db, logAppend, [
    params.organizationId, params.id, params.workerId, params.leaseId ?? null,
    params.lines, JOB_LOG_LIMITS.linesPerJob, JOB_LOG_LIMITS.bytesPerJob,
  ]);
  const row = rows[0];
  if (!row) return refused(db, params);
  return {
    ok: true,
    written: row.written,
    dropped: row.dropped + (params.lines.length - row.written),
    lastSeq: row.last_seq === null ? null : Number(row.last_seq),
  };
}

export interface JobLogLine {
  seq: number;
  at: Date;
  line: string;
}

/** One job's log lines after `after`, oldest first. */
export async function jobLogList(db: Queryable, organizationId: string, id: string, after: number, limit: number): Promise<JobLogLine[]> {
  if (!isUuid(id)) return [];
  const rows = await run<{ seq: string; at: Date; line: string }>(db, logList, [organizationId, id, after, limit]);
  return rows.map((row) => ({ seq: Number(row.seq), at: row.at, line: row.line }));
}
