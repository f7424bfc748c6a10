import { JOB_STATUSES, type JobStatus } from '@spool/protocol';
import type { Queryable, Statement } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import type { JobRow } from '../types.js';

const get = sqlFile(import.meta.url, './job-get.sql');
const listTemplate = sqlFile(import.meta.url, './job-list.sql');
const stats = sqlFile(import.meta.url, './job-stats.sql');
const statusMany = sqlFile(import.meta.url, './job-status-many.sql');
const queuesOutside = sqlFile(import.meta.url, './job-queues-outside.sql');

/** Columns a job list may be ordered by (docs/compatibility.md §1.5). */
export const JOB_ORDER_COLUMNS = ['created_at', 'updated_at', 'scheduled_at', 'completed_at', 'priority', 'status', 'queue_name', 'retry_count'] as const;
export type JobOrderColumn = (typeof JOB_ORDER_COLUMNS)[number];
export type OrderDirection = 'asc' | 'desc';

const NULLABLE_ORDER_COLUMNS = new Set<JobOrderColumn>(['scheduled_at', 'completed_at']);

// One statement per (column, direction), built once from the whitelist: the
// SQL stays readable in job-list.sql and every variant is a named prepared statement.
const listStatements = new Map<string, Statement>();
if (!listTemplate.text.includes('{{order}}')) throw new Error('job-list.sql lost its {{order}} placeholder');
for (const column of JOB_ORDER_COLUMNS) {
  for (const dir of ['asc', 'desc'] as const) {
    const nulls = NULLABLE_ORDER_COLUMNS.has(column) ? ' NULLS LAST' : '';
    const order = `${column} ${dir.toUpperCase()}${nulls}, id ${dir.toUpperCase()}`;
    listStatements.set(`${column}:${dir}`, { name: `${listTemplate.name}_${column}_${dir}`, text: listTemplate.text.replaceAll('{{order}}', order) });
  }
}

export type JobSummaryRow = Pick<JobRow, 'id' | 'queue_name' | 'status' | 'priority' | 'retry_count' | 'max_retries' | 'created_at' | 'scheduled_at' | 'started_at' | 'completed_at'>;

export interface JobListParams {
  organizationId: string;
  queueName?: string | null;
  status?: JobStatus | null;
  /** Jobs whose tags object has this key. */
  tag?: string | null;
  limit: number;
  offset: number;
  orderBy?: JobOrderColumn;
  orderDir?: OrderDirection;
  /** The caller's queues as LIKE patterns; null or absent = every queue. */
  queues?: string[] | null;
}

/** One job of the organization, or null (also for ids that are not UUIDs). */
export async function jobGet(db: Queryable, organizationId: string, id: string): Promise<JobRow | null> {
  if (!isUuid(id)) return null;
  const rows = await run<JobRow>(db, get, [organizationId, id]);
  return rows[0] ?? null;
}

/** A page of job summaries; default order is newest first. */
export async function jobList(db: Queryable, params: JobListParams): Promise<JobSummaryRow[]> {
  const statement = listStatements.get(`${params.orderBy ?? 'created_at'}:${params.orderDir ?? 'desc'}`)!;
  return run<JobSummaryRow>(db, statement, [
    params.organizationId, params.queueName ?? null, params.status ?? null, params.tag ?? null, params.limit, params.offset, params.queues ?? null,
  ]);
}

/** Job counts by status for the organization; every status is present, plus `total`. */
export async function jobStats(db: Queryable, organizationId: string, queues: string[] | null = null): Promise<Record<JobStatus | 'total', number>> {
  const rows = await run<{ status: JobStatus; n: number }>(db, stats, [organizationId, queues]);
  const out = Object.fromEntries([...JOB_STATUSES, 'total'].map((s) => [s, 0])) as Record<JobStatus | 'total', number>;
  for (const row of rows) {
    out[row.status] = row.n;
    out.total += row.n;
  }
  return out;
}

export interface JobStatusRow {
  id: string;
  status: JobStatus;
  queue_name: string;
  retry_count: number;
  created_at: Date;
  completed_at: Date | null;
}

/** Status of the given jobs that exist in the organization (ids that are not UUIDs are skipped). */
export async function jobStatusMany(db: Queryable, organizationId: string, ids: string[]): Promise<JobStatusRow[]> {
  const valid = [...new Set(ids.filter(isUuid).map((id) => id.toLowerCase()))];
  if (valid.length === 0) return [];
  return run<JobStatusRow>(db, statusMany, [organizationId, valid]);
}

/**
 * Of `ids` (any spelling; malformed ones are ignored), the organization's
 * jobs whose queue matches none of `patterns` (LIKE patterns), lower-case.
 */
export async function jobsOutsideQueues(db: Queryable, organizationId: string, ids: readonly string[], patterns: readonly string[]): Promise<Set<string>> {
  const valid = [...new Set(ids.map((id) => id.toLowerCase()).filter(isUuid))];
  if (valid.length === 0) return new Set();
  const rows = await run<{ id: string }>(db, queuesOutside, [organizationId, valid, patterns]);
  return new Set(rows.map((row) => row.id));
}
