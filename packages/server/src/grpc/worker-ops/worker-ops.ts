/*
 * TODO(fold into engine ops): interim worker operations for the gRPC
 * WorkerService, written before the engine's worker-* ops existed. Same shape
 * as an engine op (one .sql file each, named prepared statements); move them
 * to packages/engine/src/ops (or replace them with the engine's) and delete
 * this folder.
 */
import { isUuid, jobReleaseWorker, run, sqlFile, transaction, type Db } from '@spool/engine';

const register = sqlFile(import.meta.url, './worker-register.sql');
const heartbeat = sqlFile(import.meta.url, './worker-heartbeat.sql');
const deregister = sqlFile(import.meta.url, './worker-deregister.sql');

export interface NewWorker {
  organizationId: string;
  queueName: string;
  hostname: string;
  workerType: string | null;
  maxConcurrency: number;
  metadata: Record<string, unknown>;
  version: string | null;
}

/** Registers a worker (status healthy); returns its id. */
export async function workerRegister(db: Db, worker: NewWorker): Promise<{ id: string }> {
  const rows = await run<{ id: string }>(db, register, [
    worker.organizationId, worker.queueName, worker.hostname, worker.workerType, worker.maxConcurrency, JSON.stringify(worker.metadata), worker.version,
  ]);
  return rows[0]!;
}

export interface WorkerBeat {
  organizationId: string;
  id: string;
  currentJobs: number;
  status: 'healthy' | 'degraded' | 'draining';
  /** null keeps the stored metadata. */
  metadata: Record<string, unknown> | null;
}

/** Records a heartbeat; false when no worker of the organization has that id (any string). */
export async function workerHeartbeat(db: Db, beat: WorkerBeat): Promise<boolean> {
  if (!isUuid(beat.id)) return false;
  const rows = await run(db, heartbeat, [beat.organizationId, beat.id, beat.currentJobs, beat.status, beat.metadata === null ? null : JSON.stringify(beat.metadata)]);
  return rows.length > 0;
}

/** Marks a worker offline and gives its processing jobs back; false when unknown. */
export async function workerDeregister(db: Db, organizationId: string, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  return transaction(db, async (client) => {
    const rows = await run(client, deregister, [organizationId, id]);
    if (rows.length === 0) return false;
    await jobReleaseWorker(client, organizationId, id, 'Worker deregistered');
    return true;
  });
}
