import { jobClaim, jobCompleteMany, jobFailMany } from '@spool/engine';
import type { TestServer } from './server.js';

/** A claimed job as a worker sees it. */
export interface ClaimedJob {
  id: string;
  queue_name: string;
  payload: any;
  lease_id: string;
}

export interface HttpWorker {
  workerId: string;
  claim(queue: string, limit?: number): Promise<ClaimedJob[]>;
  complete(job: ClaimedJob, result?: unknown): Promise<void>;
  fail(job: ClaimedJob, error: string): Promise<void>;
}

/**
 * A worker for tests: claims, completes and fails jobs through the same
 * engine operations the worker endpoints use (POST /jobs/claim, /complete,
 * /fail), against the server's own database.
 */
export function httpWorker(server: TestServer, workerId = 'test-worker'): HttpWorker {
  const org = server.organizationId;
  return {
    workerId,
    async claim(queue, limit = 1) {
      const rows = await jobClaim(server.spool.db, { organizationId: org, queueName: queue, workerId, limit, leaseSeconds: 60 });
      return rows.map((row) => ({ id: row.id, queue_name: row.queue_name, payload: row.payload, lease_id: row.lease_id! }));
    },
    async complete(job, result) {
      const [outcome] = await jobCompleteMany(server.spool.db, org, [{ id: job.id, workerId, leaseId: job.lease_id, result }]);
      if (!outcome?.ok) throw new Error(`complete of ${job.id} refused: ${outcome && !outcome.ok ? outcome.reason : 'no outcome'}`);
    },
    async fail(job, error) {
      const [outcome] = await jobFailMany(server.spool.db, org, [{ id: job.id, workerId, leaseId: job.lease_id, error }]);
      if (!outcome?.ok) throw new Error(`fail of ${job.id} refused`);
    },
  };
}
