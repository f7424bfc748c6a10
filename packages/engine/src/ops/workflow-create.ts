import { LIMITS, ValidationError } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { uuidv7 } from '../ids.js';

const statement = sqlFile(import.meta.url, './workflow-create.sql');

export type DependencyMode = 'all' | 'any';

export interface WorkflowJobInput {
  key: string;
  queueName: string;
  payload: unknown;
  /** Keys of jobs in the same workflow; [] = runs at once. */
  dependsOn?: string[];
  dependencyMode?: DependencyMode;
  priority?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
}

export interface WorkflowInput {
  organizationId: string;
  name: string;
  description?: string | null;
  metadata?: unknown;
  jobs: WorkflowJobInput[];
}

export interface CreatedWorkflow {
  workflowId: string;
  /** In input order. */
  jobIds: { key: string; jobId: string }[];
}

/**
 * Orders the jobs so that every job comes after its dependencies, or throws a
 * ValidationError naming a duplicate key, an unknown key in depends_on, or
 * the keys on a cycle (Kahn's algorithm).
 */
export function workflowTopologicalOrder(jobs: readonly Pick<WorkflowJobInput, 'key' | 'dependsOn'>[]): string[] {
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
  workflowTopologicalOrder(input.jobs);
  const workflowId = uuidv7();
  // Sorted so that ids (and so listings ordered by id) follow the request order.
  const ids = input.jobs.map(() => uuidv7()).sort();
  const idByKey = new Map(input.jobs.map((job, index) => [job.key, ids[index]!]));
  const edgeJob: string[] = [];
  const edgeDep: string[] = [];
  const depCounts = input.jobs.map((job) => {
    const deps = [...new Set(job.dependsOn ?? [])];
    for (const dep of deps) {
      edgeJob.push(idByKey.get(job.key)!);
      edgeDep.push(idByKey.get(dep)!);
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
  ]);
  return { workflowId, jobIds: input.jobs.map((job) => ({ key: job.key, jobId: idByKey.get(job.key)! })) };
}
