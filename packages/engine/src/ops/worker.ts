import type { Db, Queryable } from '../db.js';
import { run, sqlFile, transaction } from '../db.js';
import { isUuid } from '../ids.js';
import type { WorkerRow, WorkerStatus } from '../types.js';
import { jobReleaseWorker } from './maintenance.js';

const register = sqlFile(import.meta.url, './worker-register.sql');
const heartbeat = sqlFile(import.meta.url, './worker-heartbeat.sql');
const deregister = sqlFile(import.meta.url, './worker-deregister.sql');
const list = sqlFile(import.meta.url, './worker-list.sql');
const get = sqlFile(import.meta.url, './worker-get.sql');

export interface WorkerRegistration {
  organizationId: string;
  queueName: string;
  /** Further queues the worker serves (extension); the primary one need not repeat here. */
  queueNames?: string[];
  hostname: string;
  workerType?: string | null;
  maxConcurrency?: number;
  metadata?: Record<string, unknown> | null;
  version?: string | null;
}

/** Registers a worker; it starts `healthy`. */
export async function workerRegister(db: Queryable, input: WorkerRegistration): Promise<WorkerRow> {
  const rows = await run<WorkerRow>(db, register, [
    input.organizationId,
    input.queueName,
    input.queueNames ?? [],
    input.hostname,
    input.workerType ?? null,
    input.maxConcurrency ?? 5,
    input.metadata == null ? null : JSON.stringify(input.metadata),
    input.version ?? null,
  ]);
  return rows[0]!;
}

export interface WorkerHeartbeat {
  organizationId: string;
  id: string;
  currentJobs?: number | null;
  status: Exclude<WorkerStatus, 'offline'>;
  metadata?: Record<string, unknown> | null;
}

/** Records a heartbeat; null when there is no such worker in the organization. */
export async function workerHeartbeat(db: Queryable, input: WorkerHeartbeat): Promise<WorkerRow | null> {
  if (!isUuid(input.id)) return null;
  const rows = await run<WorkerRow>(db, heartbeat, [
    input.organizationId, input.id, input.currentJobs ?? null, input.status, input.metadata == null ? null : JSON.stringify(input.metadata),
  ]);
  return rows[0] ?? null;
}

/**
 * Marks a worker offline and, in the same transaction, gives its processing
 * jobs back to pending (no retry counted). Null when there is no such worker.
 */
export async function workerDeregister(db: Db, organizationId: string, id: string): Promise<{ worker: WorkerRow; releasedJobs: number } | null> {
  if (!isUuid(id)) return null;
  return transaction(db, async (client) => {
    const rows = await run<WorkerRow>(client, deregister, [organizationId, id]);
    const worker = rows[0];
    if (!worker) return null;
    const releasedJobs = await jobReleaseWorker(client, organizationId, id, 'Worker deregistered');
    return { worker, releasedJobs };
  }, { retrySerializationFailure: true });
}

/** Workers of the organization, most recent heartbeat first. */
export async function workerList(db: Queryable, organizationId: string, limit = 100, queues: string[] | null = null): Promise<WorkerRow[]> {
  return run<WorkerRow>(db, list, [organizationId, limit, queues]);
}

/** One worker, or null (also for ids that are not UUIDs). */
export async function workerGet(db: Queryable, organizationId: string, id: string): Promise<WorkerRow | null> {
  if (!isUuid(id)) return null;
  const rows = await run<WorkerRow>(db, get, [organizationId, id]);
  return rows[0] ?? null;
}
