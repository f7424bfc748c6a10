import { LIMITS, ValidationError } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { uuidv7 } from '../ids.js';

const statement = sqlFile(import.meta.url, './workflow-create.sql');

export type DependencyMode = 'all' | 'any';

/**
 * What a dependency's final failure (dead-lettered, failed, cancelled or
 * expired) does to the job that depends on it (migration 035,
 * docs/workflows.md "When a parent fails"): `block` (the default) waits, as
 * a retry of the parent may still complete it; `cancel` cancels the job (and
 * its own dependents follow their edges); `continue` counts the edge as
 * satisfied.
 */
export type OnParentFailure = 'block' | 'cancel' | 'continue';

export const ON_PARENT_FAILURE: readonly OnParentFailure[] = ['block', 'cancel', 'continue'];

export interface WorkflowJobInput {
  key: string;
  queueName: string;
  payload: unknown;
  /** Keys of jobs in the same workflow; [] = runs at once. */
  dependsOn?: string[];
  dependencyMode?: DependencyMode;
  /** For all its edges, or per dependency key; edges not named take the workflow's. */
  onParentFailure?: OnParentFailure | Record<string, OnParentFailure>;
  priority?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
}

export interface WorkflowInput {
  organizationId: string;
  name: string;
  description?: string | null;
  metadata?: unknown;
  /** The default of its edges; `block` when absent. */
  onParentFailure?: OnParentFailure;
  jobs: WorkflowJobInput[];
}

export interface CreatedWorkflow {
  workflowId: string;
  /** In input order. */
  jobIds: { key: string; jobId: string }[];
}

/**
 * Orders the jobs so that every job comes after its dependencies, or throws a
 * ValidationError naming a duplicate key, an unknown key in depends_on, the
 * keys on a cycle (Kahn's algorithm), or an on_parent_failure that is no
 * policy or names a key outside the job's depends_on.
 */
export function workflowTopologicalOrder(jobs: readonly (Pick<WorkflowJobInput, 'key' | 'dependsOn'> & Partial<Pick<WorkflowJobInput, 'onParentFailure'>>)[]): string[] {
  const keys = new Set<string>();
  jobs.forEach((job, index) => {
    if (keys.has(job.key)) throw new ValidationError(`jobs[${index}].key "${job.key}" is used twice; keys must be unique`, { field: `jobs[${index}].key` });
    keys.add(job.key);
  });
  const waiting = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  jobs.forEach((job, index) => {
    const deps = new Set(job.dependsOn ?? []);
    for (const dep of deps) {
      if (!keys.has(dep)) throw new ValidationError(`jobs[${index}].depends_on names unknown key "${dep}"`, { field: `jobs[${index}].depends_on` });
      dependents.set(dep, [...(dependents.get(dep) ?? []), job.key]);
    }
    waiting.set(job.key, deps.size);
    const own = job.onParentFailure;
    if (own === undefined) return;
    const field = `jobs[${index}].on_parent_failure`;
    if (typeof own === 'string') {
      if (!ON_PARENT_FAILURE.includes(own)) throw new ValidationError(`${field} must be one of ${ON_PARENT_FAILURE.join(', ')}`, { field });
      return;
    }
    for (const [dep, policy] of Object.entries(own)) {
      if (!deps.has(dep)) throw new ValidationError(`${field} names "${dep}", which is not in its depends_on`, { field });
      if (!ON_PARENT_FAILURE.includes(policy)) throw new ValidationError(`${field}.${dep} must be one of ${ON_PARENT_FAILURE.join(', ')}`, { field });
    }
  });
  const ready = [...waiting].filter(([, n]) => n === 0).map(([key]) => key);
  const order: string[] = [];
  while (ready.length > 0) {
    const key = ready.shift()!;
    order.push(key);
    for (const dependent of dependents.get(key) ?? []) {
      const left = waiting.get(dependent)! - 1;
      waiting.set(dependent, left);
      if (left === 0) ready.push(dependent);
    }
  }
  if (order.length < jobs.length) {
    const cyclic = [...waiting].filter(([, n]) => n > 0).map(([key]) => key);
    throw new ValidationError(`Workflow dependencies contain a cycle among keys: ${cyclic.join(', ')}`, { field: 'jobs', keys: cyclic });
  }
  return order;
}

/**
 * Creates a workflow and its jobs atomically after checking the graph (see
 * workflowTopologicalOrder). Jobs without dependencies are claimable at once.
 */
export async function workflowCreate(db: Queryable, input: WorkflowInput): Promise<CreatedWorkflow> {
  if (input.onParentFailure !== undefined && !ON_PARENT_FAILURE.includes(input.onParentFailure)) {
    throw new ValidationError(`on_parent_failure must be one of ${ON_PARENT_FAILURE.join(', ')}`, { field: 'on_parent_failure' });
  }
  workflowTopologicalOrder(input.jobs);
  const workflowId = uuidv7();
  // Sorted so that ids (and so listings ordered by id) follow the request order.
  const ids = input.jobs.map(() => uuidv7()).sort();
  const idByKey = new Map(input.jobs.map((job, index) => [job.key, ids[index]!]));
  const edgeJob: string[] = [];
  const edgeDep: string[] = [];
  const edgePolicy: OnParentFailure[] = [];
  const byDefault = input.onParentFailure ?? 'block';
  const depCounts = input.jobs.map((job) => {
    const deps = [...new Set(job.dependsOn ?? [])];
    const own = job.onParentFailure;
    for (const dep of deps) {
      edgeJob.push(idByKey.get(job.key)!);
      edgeDep.push(idByKey.get(dep)!);
      edgePolicy.push(typeof own === 'string' ? own : (own !== undefined && Object.hasOwn(own, dep) ? own[dep]! : byDefault));
    }
    return deps.length;
  });
  await run(db, statement, [
    workflowId,
    input.organizationId,
    input.name,
    input.description ?? null,
    input.metadata === undefined || input.metadata === null ? null : JSON.stringify(input.metadata),
    input.jobs.map((job) => idByKey.get(job.key)!),
    input.jobs.map((job) => job.key),
    input.jobs.map((job) => job.queueName),
    input.jobs.map((job) => JSON.stringify(job.payload ?? null)),
    input.jobs.map((job) => job.priority ?? 0),
    input.jobs.map((job) => job.maxRetries ?? null),
    input.jobs.map((job) => job.timeoutSeconds ?? null),
    input.jobs.map((job) => job.dependencyMode ?? 'all'),
    depCounts,
    edgeJob,
    edgeDep,
    LIMITS.maxRetriesDefault,
    LIMITS.timeoutSecondsDefault,
    edgePolicy,
  ]);
  return { workflowId, jobIds: input.jobs.map((job) => ({ key: job.key, jobId: idByKey.get(job.key)! })) };
}
