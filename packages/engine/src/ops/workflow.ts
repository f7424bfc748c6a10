import { ConflictError, NotFoundError, ValidationError, type JobStatus } from '@spool/protocol';
import type { Db, Queryable } from '../db.js';
import { run, sqlFile, transaction } from '../db.js';
import { isUuid } from '../ids.js';
import { jobCancelMany } from './job-cancel-many.js';
import { jobRetryMany } from './job-retry-many.js';
import type { OnParentFailure } from './workflow-create.js';

const list = sqlFile(import.meta.url, './workflow-list.sql');
const jobs = sqlFile(import.meta.url, './workflow-jobs.sql');
const jobIds = sqlFile(import.meta.url, './workflow-job-ids.sql');
const markCancelled = sqlFile(import.meta.url, './workflow-mark-cancelled.sql');

export type WorkflowStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface WorkflowRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  status: WorkflowStatus;
  total_jobs: number;
  completed_jobs: number;
  failed_jobs: number;
  cancelled_jobs: number;
  blocked_jobs: number;
  metadata: unknown;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  updated_at: Date;
  /** The queues of its jobs. */
  queue_names: string[];
}

export interface WorkflowJobRow {
  id: string;
  workflow_id: string;
  key: string | null;
  queue_name: string;
  status: JobStatus;
  payload: unknown;
  result: unknown;
  error: string | null;
  depends_on: string[];
  /** Each edge's policy, in the order of depends_on. */
  on_parent_failure: OnParentFailure[];
  priority: number;
  max_retries: number;
  attempt: number;
  timeout_seconds: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  dependency_mode: 'all' | 'any' | null;
  dependencies_met: boolean | null;
}

/** Workflows of an organization, newest first. */
export async function workflowList(db: Queryable, params: { organizationId: string; status?: string | null; limit: number; offset: number; queues?: string[] | null }): Promise<WorkflowRow[]> {
  return run<WorkflowRow>(db, list, [params.organizationId, null, params.status ?? null, params.limit, params.offset, params.queues ?? null]);
}

/** One workflow, or null (any id string is accepted). */
export async function workflowGet(db: Queryable, organizationId: string, id: string): Promise<WorkflowRow | null> {
  if (!isUuid(id)) return null;
  const rows = await run<WorkflowRow>(db, list, [organizationId, id, null, 1, 0, null]);
  return rows[0] ?? null;
}

/** The workflow's jobs (or one of them) in creation order; [] when there is no such workflow. */
export async function workflowJobs(db: Queryable, organizationId: string, workflowId: string, jobId: string | null = null): Promise<WorkflowJobRow[]> {
  if (!isUuid(workflowId) || (jobId !== null && !isUuid(jobId))) return [];
  return run<WorkflowJobRow>(db, jobs, [organizationId, workflowId, jobId]);
}

/**
 * Cancels a workflow: its pending and scheduled jobs end cancelled (running
 * ones get a cancel request), then the workflow is `cancelled`. Jobs are
 * locked before the workflow row, the order completions use, so the two
 * cannot deadlock. A completed workflow → ConflictError.
 */
export async function workflowCancel(db: Db, organizationId: string, id: string, actor: string | null = null): Promise<WorkflowRow> {
  const before = await workflowGet(db, organizationId, id);
  if (!before) throw new NotFoundError('Workflow not found');
  if (before.status === 'completed') throw new ConflictError('Workflow already completed; nothing to cancel');
  await transaction(db, async (client) => {
    const open = await run<{ id: string }>(client, jobIds, [organizationId, id, ['pending', 'scheduled', 'processing']]);
    if (open.length > 0) await jobCancelMany(client, organizationId, open.map((row) => row.id), actor);
    const marked = await run(client, markCancelled, [organizationId, id]);
    if (marked.length === 0) throw new ConflictError('Workflow already completed; nothing to cancel');
  }, { retrySerializationFailure: true });
  return (await workflowGet(db, organizationId, id))!;
}

/**
 * Retries a failed workflow: its failed and dead-lettered jobs go back to
 * pending with retry_count 0 (their blocked dependents wait for them again)
 * and the workflow runs again. Any other status → ValidationError (400).
 */
export async function workflowRetry(db: Db, organizationId: string, id: string, actor: string | null = null): Promise<WorkflowRow> {
  const before = await workflowGet(db, organizationId, id);
  if (!before) throw new NotFoundError('Workflow not found');
  if (before.status !== 'failed') throw new ValidationError(`Only failed workflows can be retried; this workflow is ${before.status}`, { status: before.status });
  await transaction(db, async (client) => {
    const failed = await run<{ id: string }>(client, jobIds, [organizationId, id, ['failed', 'deadletter']]);
    if (failed.length > 0) await jobRetryMany(client, { organizationId, ids: failed.map((row) => row.id), resetRetryCount: true, from: ['failed', 'deadletter'], actor });
  }, { retrySerializationFailure: true });
  return (await workflowGet(db, organizationId, id))!;
}
