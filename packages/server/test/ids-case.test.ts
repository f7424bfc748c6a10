/**
 * Ids in any case: PostgreSQL reads an upper-case uuid as the same row, so
 * an id must mean the same thing and get the same answer whatever its case,
 * over REST and gRPC. Worker ids are free text and stay as sent.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { status } from '@grpc/grpc-js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient, processJobsSession, toStruct, type GrpcTestClient } from '../../../test-support/grpc.js';
import { enqueue, enqueueAndClaim } from './jobs-helpers.js';

let server: TestServer;
let client: GrpcTestClient;
let queueSeq = 0;
before(async () => {
  server = await startTestServer('idscase', { grpcPort: 0 });
  client = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
});
after(async () => {
  client.close();
  await server.close();
});

/** The id with the letters chosen by `mask` in upper case. */
function spell(id: string, mask: boolean[]): string {
  return [...id].map((c, i) => (mask[i % mask.length] ? c.toUpperCase() : c)).join('');
}
const masks = fc.array(fc.boolean(), { minLength: 1, maxLength: 36 });
const freshQueue = () => `ids-case-${++queueSeq}`;
const statusOf = async (id: string) => (await server.database.pool.query('SELECT status, retry_count FROM spool.jobs WHERE id = $1', [id])).rows[0];
const RUNS = { numRuns: 12 };

describe('REST: ids in any case', () => {
  it('complete and fail with a mixed-case job id and lease id do what they answer', async () => {
    await fc.assert(fc.asyncProperty(masks, masks, fc.boolean(), async (idMask, leaseMask, completeIt) => {
      const job = await enqueueAndClaim(server, freshQueue());
      const path = `/api/v1/jobs/${spell(job.id, idMask)}/${completeIt ? 'complete' : 'fail'}`;
      const body = completeIt ? { worker_id: 'w1', lease_id: spell(job.lease_id, leaseMask), result: { ok: true } } : { worker_id: 'w1', lease_id: spell(job.lease_id, leaseMask), error: 'boom' };
      const res = await server.request('POST', path, { body });
      assert.equal(res.status, 200, res.text);
      assert.equal((await statusOf(job.id)).status, completeIt ? 'completed' : 'pending');
    }), RUNS);
  });

  it('a stale lease in mixed case is LEASE_EXPIRED and changes nothing', async () => {
    await fc.assert(fc.asyncProperty(masks, async (mask) => {
      const job = await enqueueAndClaim(server, freshQueue());
      const res = await server.request('POST', `/api/v1/jobs/${spell(job.id, mask)}/complete`, { body: { worker_id: 'w1', lease_id: spell(randomUUID(), mask) } });
      assert.equal(res.status, 409, res.text);
      assert.equal(res.body.code, 'LEASE_EXPIRED');
      assert.equal((await statusOf(job.id)).status, 'processing');
    }), RUNS);
  });

  it('batch complete answers each item for the job it completed', async () => {
    await fc.assert(fc.asyncProperty(masks, async (mask) => {
      const job = await enqueueAndClaim(server, freshQueue());
      const res = await server.request('POST', '/api/v1/jobs/complete', { body: { worker_id: 'w1', items: [{ job_id: spell(job.id, mask), lease_id: spell(job.lease_id, mask) }] } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.results.map((r: { job_id: string; success: boolean }) => [r.job_id, r.success]), [[job.id, true]]);
      assert.equal((await statusOf(job.id)).status, 'completed');
    }), RUNS);
  });

  it('reads jobs, workflows and their jobs, and schedules by ids in any case; answers name them in lower case', async () => {
    const id = await enqueue(server, { queue_name: freshQueue() });
    const workflow = await server.request('POST', '/api/v1/workflows', { body: { name: 'case', jobs: [{ key: 'a', queue_name: freshQueue(), payload: {} }] } });
    const schedule = await server.request('POST', '/api/v1/schedules', { body: { name: 'case', cron_expression: '0 0 1 1 * *', queue_name: 'q', payload_template: {} } });
    const jobInWorkflow = workflow.body.job_ids[0].job_id;
    await fc.assert(fc.asyncProperty(masks, async (mask) => {
      const job = await server.request('GET', `/api/v1/jobs/${spell(id, mask)}`);
      assert.equal(job.status, 200);
      assert.equal(job.body.id, id);
      const statuses = await server.request('GET', `/api/v1/jobs/status?ids=${spell(id, mask)}`);
      assert.deepEqual(statuses.body.map((s: { id: string }) => s.id), [id]);
      const wf = await server.request('GET', `/api/v1/workflows/${spell(workflow.body.workflow_id, mask)}/jobs/${spell(jobInWorkflow, mask)}`);
      assert.equal(wf.status, 200, wf.text);
      assert.equal(wf.body.id, jobInWorkflow);
      const sched = await server.request('GET', `/api/v1/schedules/${spell(schedule.body.id, mask)}`);
      assert.equal(sched.status, 200);
      assert.equal(sched.body.id, schedule.body.id);
    }), RUNS);
  });

  it('keeps worker ids as sent: they are free text', async () => {
    const queue = freshQueue();
    const id = await enqueue(server, { queue_name: queue });
    const upper = randomUUID().toUpperCase();
    const claimed = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: queue, worker_id: upper } });
    assert.equal(claimed.body.jobs[0].id, id);
    const row = (await server.database.pool.query('SELECT assigned_worker_id FROM spool.jobs WHERE id = $1', [id])).rows[0];
    assert.equal(row.assigned_worker_id, upper);
    const lower = await server.request('POST', `/api/v1/jobs/${id}/complete`, { body: { worker_id: upper.toLowerCase() } });
    assert.equal(lower.status, 404, 'another spelling is another worker');
    assert.equal((await server.request('POST', `/api/v1/jobs/${id}/complete`, { body: { worker_id: upper } })).status, 200);
  });
});

describe('gRPC: ids in any case', () => {
  async function leased(): Promise<{ jobId: string; leaseId: string }> {
    const queueName = freshQueue();
    const { jobId } = await client.call('queue', 'Enqueue', { queueName, payload: toStruct({}) });
    const { jobs } = await client.call('queue', 'Dequeue', { queueName, workerId: 'worker-a', leaseDurationSecs: 30 });
    return { jobId, leaseId: jobs[0].leaseId };
  }

  it('Complete, Fail and RenewLease with a mixed-case job id and lease id do what they answer', async () => {
    await fc.assert(fc.asyncProperty(masks, masks, fc.constantFrom('Complete', 'Fail', 'RenewLease'), async (idMask, leaseMask, method) => {
      const { jobId, leaseId } = await leased();
      const request: Record<string, unknown> = { jobId: spell(jobId, idMask), workerId: 'worker-a', leaseId: spell(leaseId, leaseMask) };
      if (method === 'Fail') Object.assign(request, { error: 'boom', retry: true });
      if (method === 'RenewLease') request.extensionSecs = 60;
      const response = await client.call('queue', method, request);
      assert.equal(response.success, true, `${method} ${JSON.stringify(response)}`);
      assert.equal((await statusOf(jobId)).status, { Complete: 'completed', Fail: 'pending', RenewLease: 'processing' }[method]);
    }), RUNS);
  });

  it('ProcessJobs: complete, fail and renew_lease with mixed-case ids do what they answer', async () => {
    const duplex = client.queue.ProcessJobs(client.metadata());
    const send = processJobsSession(duplex);
    try {
      await fc.assert(fc.asyncProperty(masks, masks, fc.constantFrom('complete', 'fail', 'renewLease'), async (idMask, leaseMask, kind) => {
        const { jobId, leaseId } = await leased();
        const body: Record<string, unknown> = { jobId: spell(jobId, idMask), workerId: 'worker-a', leaseId: spell(leaseId, leaseMask) };
        if (kind === 'fail') Object.assign(body, { error: 'boom', retry: true });
        if (kind === 'renewLease') body.extensionSecs = 60;
        const response = await send({ [kind]: body });
        assert.equal(response[kind]?.success, true, `${kind} ${JSON.stringify(response)}`);
        assert.equal((await statusOf(jobId)).status, { complete: 'completed', fail: 'pending', renewLease: 'processing' }[kind]);
      }), RUNS);
    } finally {
      duplex.end();
    }
  });

  it('a stale mixed-case lease is FAILED_PRECONDITION and changes nothing; GetJob finds the job', async () => {
    await fc.assert(fc.asyncProperty(masks, async (mask) => {
      const { jobId } = await leased();
      await assert.rejects(client.call('queue', 'Fail', { jobId: spell(jobId, mask), workerId: 'worker-a', leaseId: spell(randomUUID(), mask), error: 'x', retry: true }), (err: { code: number }) => err.code === status.FAILED_PRECONDITION);
      assert.equal((await statusOf(jobId)).status, 'processing');
      const { job } = await client.call('queue', 'GetJob', { jobId: spell(jobId, mask) });
      assert.equal(job.id, jobId);
    }), RUNS);
  });
});
