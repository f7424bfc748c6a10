import type { JobStatus } from '@spool/protocol';
import { run, sqlFile, type Queryable } from '../db.js';
import { isUuid } from '../ids.js';

const history = sqlFile(import.meta.url, './job-history.sql');

/** One recorded transition of a job (a `spool.job_history` row without its tenant columns). */
export interface JobHistoryRow {
  id: number;
  event: string;
  from_status: JobStatus | null;
  to_status: JobStatus | null;
  worker_id: string | null;
  lease_id: string | null;
  message: string | null;
  created_at: Date;
  /** Who asked for the change (an edit, a retry or cancel through the API); null for the server's own moves (migration 031). */
  actor: string | null;
  /** What an edit changed: `{ fields, from, to }` (job-edit.sql); null for other events. */
  details: Record<string, unknown> | null;
}

/**
 * The first `limit` transitions of one job of the organization, oldest
 * first; [] for an unknown job or an id that is not a UUID.
 */
export async function jobHistory(db: Queryable, organizationId: string, jobId: string, limit: number): Promise<JobHistoryRow[]> {
  if (!isUuid(jobId)) return [];
  return run<JobHistoryRow>(db, history, [organizationId, jobId, limit]);
}
