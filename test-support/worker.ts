import type { TestServer } from './server.js';

/** A claimed job as a worker sees it (POST /jobs/claim). */
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

/** A worker for tests that speaks the worker protocol over real HTTP (docs/compatibility.md §3.4). */
export function httpWorker(server: TestServer, workerId = 'test-worker'): HttpWorker {
  const call = async (path: string, body: unknown) => {
    const response = await server.request('POST', path, { body });
    if (response.status !== 200) throw new Error(`POST ${path} answered ${response.status}: ${response.text}`);
    return response.body;
  };
  return {
    workerId,
    async claim(queue, limit = 1) {
      return (await call('/api/v1/jobs/claim', { queue_name: queue, worker_id: workerId, limit, lease_duration_secs: 60 })).jobs;
    },
    async complete(job, result) {
      await call(`/api/v1/jobs/${job.id}/complete`, { worker_id: workerId, lease_id: job.lease_id, ...(result === undefined ? {} : { result }) });
    },
    async fail(job, error) {
      await call(`/api/v1/jobs/${job.id}/fail`, { worker_id: workerId, lease_id: job.lease_id, error });
    },
  };
}
