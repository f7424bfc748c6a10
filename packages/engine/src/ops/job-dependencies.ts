import pg from 'pg';
import { ConflictError, NotFoundError, type JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile, transaction } from '../db.js';
import { isUuid } from '../ids.js';
import { ON_PARENT_FAILURE, type OnParentFailure } from './workflow-create.js';

const lockJobs = sqlFile(import.meta.url, './job-dependencies-lock.sql');
const lockDependents = sqlFile(import.meta.url, './job-dependents-lock.sql');
const closure = sqlFile(import.meta.url, './job-dependents-closure.sql');
const insertEdges = sqlFile(import.meta.url, './job-dependencies-insert.sql');
const recount = sqlFile(import.meta.url, './job-dependencies-recount.sql');
const getEdges = sqlFile(import.meta.url, './job-dependencies-get.sql');
const settle = sqlFile(import.meta.url, './job-dependents-settle.sql');
const results = sqlFile(import.meta.url, './job-dependency-results.sql');

/** Statuses a job ends in without success: its dependents' on_parent_failure applies. */
const ENDED_UNSUCCESSFULLY: ReadonlySet<JobStatus> = new Set(['failed', 'deadletter', 'cancelled']);

export interface DependencyEdgeView {
  job_id: string;
  queue_name: string | null;
  status: JobStatus | null;
  dependency_type: string;
  on_parent_failure: OnParentFailure;
}

export interface JobDependencies {
  job_id: string;
  status: JobStatus;
  dependencies_met: boolean;
  dependency_mode: 'all' | 'any' | null;
  dependencies: DependencyEdgeView[];
  dependents: DependencyEdgeView[];
}

/** A job's dependencies and dependents, or null when the job does not exist in the organization. */
export async function jobDependenciesGet(db: Queryable, organizationId: string, jobId: string): Promise<JobDependencies | null> {
  if (!isUuid(jobId)) return null;
  const job = await db.query<{ status: JobStatus; dependencies_met: boolean | null; dependency_mode: 'all' | 'any' | null }>(
    'SELECT status, dependencies_met, dependency_mode FROM spool.jobs WHERE organization_id = $1 AND id = $2',
    [organizationId, jobId],
  );
  const row = job.rows[0];
  if (!row) return null;
  const edges = await run<DependencyEdgeView & { kind: 'dependency' | 'dependent' }>(db, getEdges, [organizationId, jobId]);
  const view = ({ kind: _kind, created_at: _c, ...rest }: DependencyEdgeView & { kind: string; created_at?: Date }) => rest;
  return {
    job_id: jobId,
    status: row.status,
    dependencies_met: row.dependencies_met !== false,
    dependency_mode: row.dependency_mode,
    dependencies: edges.filter((e) => e.kind === 'dependency').map(view),
    dependents: edges.filter((e) => e.kind === 'dependent').map(view),
  };
}

export interface DependenciesAddParams {
  organizationId: string;
  jobId: string;
  dependsOn: string[];
  /** Stored on each new edge ("completion" by default). */
  dependencyType?: string;
  /** Changes the dependent's mode when given. */
  dependencyMode?: 'all' | 'any' | null;
  /** Stored on each new edge (`block` by default; migration 035). */
  onParentFailure?: OnParentFailure;
}

export interface DependenciesAddResult {
  added: { job_id: string; depends_on_job_id: string; dependency_type: string; on_parent_failure: OnParentFailure }[];
  dependenciesMet: boolean;
  /** The job's status afterwards: `cancelled` when a new `cancel` edge points to a job that has already failed. */
  status: JobStatus;
}

/**
 * Makes a pending or scheduled job depend on other jobs of its organization.
 * Self edges, existing edges and edges that would close a cycle are skipped;
 * the job's `dependencies_met` is recounted. Unknown jobs → NotFoundError; a
 * job that already started → ConflictError. Must run inside a transaction
 * (see jobDependenciesAddTx): it locks, then recounts with a fresh snapshot.
 * A new edge's policy holds from now on, also for a dependency that has
 * already ended without success: `continue` counts it as satisfied in the
 * recount, `cancel` cancels the job at once (spool.job_dependents_settle),
 * `block` leaves it blocked.
 */
export async function jobDependenciesAdd(client: pg.PoolClient | pg.Client, params: DependenciesAddParams): Promise<DependenciesAddResult> {
  const { organizationId: org, jobId } = params;
  if (!isUuid(jobId)) throw new NotFoundError('Job not found');
  const wanted = [...new Set(params.dependsOn)];
  const unknown = wanted.find((id) => !isUuid(id));
  if (unknown !== undefined) throw new NotFoundError(`Dependency job ${unknown} not found`, { job_id: unknown });
  // Cycle checks must see every committed edge of the organization: adds
  // serialize per organization (a transaction lock: works through PgBouncer).
  await client.query("SELECT pg_advisory_xact_lock(hashtextextended('spool.job_dependencies:' || $1::text, 0))", [org]);
  const locked = await run<{ id: string; status: JobStatus }>(client, lockJobs, [org, [jobId, ...wanted]]);
  const byId = new Map(locked.map((row) => [row.id, row]));
  const job = byId.get(jobId);
  if (!job) throw new NotFoundError('Job not found');
  const missing = wanted.find((id) => !byId.has(id));
  if (missing !== undefined) throw new NotFoundError(`Dependency job ${missing} not found`, { job_id: missing });
  if (job.status !== 'pending' && job.status !== 'scheduled') {
    throw new ConflictError(`Dependencies can only be added to a pending or scheduled job; this job is ${job.status}`);
  }
  const candidates = wanted.filter((id) => id !== jobId);
  const cyclic = new Set((await run<{ id: string }>(client, closure, [org, jobId, candidates])).map((row) => row.id));
  const accepted = candidates.filter((id) => !cyclic.has(id));
  const type = params.dependencyType ?? 'completion';
  const policy = params.onParentFailure ?? 'block';
  if (!ON_PARENT_FAILURE.includes(policy)) throw new RangeError(`onParentFailure must be one of ${ON_PARENT_FAILURE.join(', ')}`);
  const inserted = await run<{ depends_on_job_id: string }>(client, insertEdges, [org, jobId, accepted, type, params.dependencyMode ?? null, policy]);
  const [state] = await run<{ dependencies_met: boolean }>(client, recount, [org, [jobId]]);
  let status: JobStatus = job.status;
  // The parents are locked: a status read above stays true until commit.
  const ended = policy === 'cancel' ? inserted.map((row) => row.depends_on_job_id).filter((id) => ENDED_UNSUCCESSFULLY.has(byId.get(id)!.status)) : [];
  if (ended.length > 0) {
    const [settled] = await run<{ cancelled: number }>(client, settle, [org, ended, [jobId]]);
    if ((settled?.cancelled ?? 0) > 0) status = 'cancelled';
  }
  return {
    added: inserted.map((row) => ({ job_id: jobId, depends_on_job_id: row.depends_on_job_id, dependency_type: type, on_parent_failure: policy })),
    dependenciesMet: state?.dependencies_met ?? true,
    status,
  };
}

export interface DependencyResult {
  job_id: string;
  /** Its key in its workflow, if it belongs to one. */
  key: string | null;
  queue_name: string | null;
  /** null: the job no longer exists (retention, DLQ purge). */
  status: JobStatus | null;
  result: unknown;
  /** Its last error, when it has not completed. */
  error: string | null;
  completed_at: Date | null;
  dependency_type: string;
  on_parent_failure: OnParentFailure;
}

/**
 * What the dependencies of a job ended with, in the order the edges were
 * added; null when the job does not exist in the organization. `queues`
 * (LIKE patterns, null = every queue) leaves out dependencies of other queues.
 */
export async function jobDependencyResults(db: Queryable, params: { organizationId: string; jobId: string; queues?: string[] | null; limit: number; offset: number }): Promise<DependencyResult[] | null> {
  if (!isUuid(params.jobId)) return null;
  const rows = await run<DependencyResult | { job_id: null }>(db, results, [params.organizationId, params.jobId, params.queues ?? null, params.limit, params.offset]);
  if (rows.length === 0) return null;
  return rows.filter((row): row is DependencyResult => row.job_id !== null);
}

/** jobDependenciesAdd in its own transaction. */
export async function jobDependenciesAddTx(db: pg.Pool, params: DependenciesAddParams): Promise<DependenciesAddResult> {
  return transaction(db, (client) => jobDependenciesAdd(client, params), { retrySerializationFailure: true });
}

/**
 * Recounts the blocked dependents of `completedIds` (after completions that
 * could not see newly added edges). Locks first, recounts in a second
 * statement. On a pool this runs in its own transaction; on a client the
 * caller's transaction (if any) is used.
 */
export async function jobDependentsRecount(db: Queryable, organizationId: string, completedIds: string[]): Promise<number> {
  if (completedIds.length === 0) return 0;
  const work = async (client: Queryable) => {
    const dependents = await run<{ id: string }>(client, lockDependents, [organizationId, completedIds]);
    if (dependents.length === 0) return 0;
    const rows = await run<{ dependencies_met: boolean; was_met: boolean | null }>(client, recount, [organizationId, dependents.map((d) => d.id)]);
    return rows.filter((row) => row.dependencies_met && row.was_met === false).length;
  };
  return db instanceof pg.Pool ? transaction(db, work, { retrySerializationFailure: true }) : work(db);
}
