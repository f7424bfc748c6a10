import type { JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import type { JobRow } from '../types.js';
import { jobGet } from './job-read.js';

const statement = sqlFile(import.meta.url, './job-edit.sql');

/** The statuses a job may be edited in (job-edit.sql). */
export const EDITABLE_STATUSES: readonly JobStatus[] = ['pending', 'scheduled', 'deadletter', 'failed'];

/** What an edit changes; an absent field stays as it is. */
export interface JobEdit {
  payload?: unknown;
  priority?: number;
  queueName?: string;
  maxRetries?: number;
  /** null clears the tags. */
  tags?: Record<string, unknown> | null;
  /** null = now (the job is due at once). */
  scheduledAt?: Date | null;
}

/** Why an edit was refused (job-edit.sql): the rule broken, with the job's state that broke it. */
export type JobEditRefusal = 'status' | 'scheduled_at' | 'expires_at' | 'max_retries';

export type JobEditOutcome =
  | { outcome: 'edited'; job: JobRow; previousStatus: JobStatus; changed: boolean }
  | { outcome: 'refused'; refusal: JobEditRefusal; status: JobStatus; retryCount: number; expiresAt: Date | null }
  | { outcome: 'not_found' };

export interface JobEditParams {
  organizationId: string;
  id: string;
  edit: JobEdit;
  /** Who asks (the credential, job_history.actor). */
  actor: string | null;
  /** The caller's queues as LIKE patterns; null = every queue. A job outside them is not found. */
  queues: string[] | null;
}

type EditRow = Partial<JobRow> & {
  previous_status: JobStatus;
  previous_queue_name: string;
  previous_retry_count: number;
  previous_expires_at: Date | null;
  refusal: JobEditRefusal | null;
};

/** Edits a waiting or dead-lettered job in one statement, with its history row. */
export async function jobEdit(db: Queryable, params: JobEditParams): Promise<JobEditOutcome> {
  if (!isUuid(params.id)) return { outcome: 'not_found' };
  const e = params.edit;
  const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));
  const rows = await run<EditRow>(db, statement, [
    params.organizationId,
    params.id,
    params.queues,
    params.actor,
    json(e.payload),
    e.priority ?? null,
    e.queueName ?? null,
    e.maxRetries ?? null,
    json(e.tags),
    e.scheduledAt !== undefined,
    e.scheduledAt ?? null,
  ]);
  const row = rows[0];
  if (!row) return { outcome: 'not_found' };
  if (row.refusal) return { outcome: 'refused', refusal: row.refusal, status: row.previous_status, retryCount: row.previous_retry_count, expiresAt: row.previous_expires_at };
  if (row.id) {
    const { previous_status, previous_queue_name, previous_retry_count, previous_expires_at, refusal, notified, ...job } = row as EditRow & { notified: unknown };
    return { outcome: 'edited', job: job as JobRow, previousStatus: previous_status, changed: true };
  }
  // Nothing to change: the job as it is.
  const job = await jobGet(db, params.organizationId, params.id);
  return job ? { outcome: 'edited', job, previousStatus: job.status, changed: false } : { outcome: 'not_found' };
}
