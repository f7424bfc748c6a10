/**
 * A queue's configured max_retries and default_timeout are the defaults of
 * the jobs enqueued to it without their own values, on every path that
 * creates jobs from a request (REST single and bulk, gRPC, workflows,
 * incoming webhooks, cron). Before, the config was stored, echoed and ignored.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient, toStruct, type GrpcTestClient } from '../../../test-support/grpc.js';

let server: TestServer;
let grpc: GrpcTestClient;
before(async () => {
  server = await startTestServer('queuedefaults');
  grpc = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
  const config = await server.request('PUT', '/api/v1/queues/qd/config', { body: { max_retries: 9, default_timeout: 42 } });
  assert.equal(config.status, 200);
});
after(async () => {
  grpc.close();
  await server.close();
});

async function settings(id: string): Promise<[number, number]> {
  const job = await server.request('GET', `/api/v1/jobs/${id}`);
  assert.equal(job.status, 200, job.text);
  return [job.body.max_retries, job.body.timeout_seconds];
}

describe("a queue's max_retries and default_timeout", () => {
  it('apply to POST /jobs without its own values; a job\'s own values win', async () => {
    const plain = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'qd', payload: {} } });
    assert.deepEqual(await settings(plain.body.id), [9, 42]);
    const own = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'qd', payload: {}, max_retries: 1 } });
    assert.deepEqual(await settings(own.body.id), [1, 42]);
    const zero = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'qd', payload: {}, max_retries: 0, timeout_seconds: 5 } });
    assert.deepEqual(await settings(zero.body.id), [0, 5]);
  });

  it('apply per item to POST /jobs/bulk', async () => {
    const bulk = await server.request('POST', '/api/v1/jobs/bulk', { body: { queue_name: 'qd', jobs: [{ payload: {} }, { payload: {}, timeout_seconds: 7 }] } });
    assert.equal(bulk.status, 200, bulk.text);
    const [first, second] = bulk.body.succeeded;
    assert.deepEqual(await settings(first.job_id), [9, 42]);
    assert.deepEqual(await settings(second.job_id), [9, 7]);
  });

  it('apply to gRPC Enqueue (0 = unset)', async () => {
    const created = await grpc.call('queue', 'Enqueue', { queueName: 'qd', payload: toStruct({}), maxRetries: 0, timeoutSeconds: 0 });
    assert.deepEqual(await settings(created.jobId), [9, 42]);
  });

  it('apply to workflow jobs and to incoming webhooks', async () => {
    const workflow = await server.request('POST', '/api/v1/workflows', { body: { name: 'qd flow', jobs: [{ key: 'a', queue_name: 'qd', payload: {} }, { key: 'b', queue_name: 'elsewhere', payload: {} }] } });
    assert.equal(workflow.status, 201, workflow.text);
    const ids = Object.fromEntries(workflow.body.job_ids.map((j: { key: string; job_id: string }) => [j.key, j.job_id]));
    assert.deepEqual(await settings(ids.a), [9, 42]);
    assert.deepEqual(await settings(ids.b), [3, 300]);
    const token = (await server.request('POST', '/api/v1/organizations/webhook-token/regenerate')).body.token as string;
    const ingested = await server.request('POST', `/api/v1/webhooks/${server.organizationId}/custom`, { auth: null, headers: { 'x-webhook-token': token }, body: { queue_name: 'qd', payload: { via: 'webhook' } } });
    assert.equal(ingested.status, 200, ingested.text);
    const { rows } = await server.spool.db.query<{ max_retries: number; timeout_seconds: number }>("SELECT max_retries, timeout_seconds FROM spool.jobs WHERE queue_name = 'qd' AND payload->>'via' = 'webhook'");
    assert.deepEqual([rows[0]!.max_retries, rows[0]!.timeout_seconds], [9, 42]);
  });

  it('cron: a schedule without its own max_retries / timeout_seconds gives its jobs the queue\'s; one with them, its own', async () => {
    const plain = await server.request('POST', '/api/v1/schedules', { body: { name: 'qd-cron', cron_expression: '0 0 0 * * *', queue_name: 'qd', payload_template: {} } });
    assert.equal(plain.status, 201, plain.text);
    const fired = await server.request('POST', `/api/v1/schedules/${plain.body.id}/trigger`);
    assert.deepEqual(await settings(fired.body.job_id), [9, 42]);
    const own = await server.request('POST', '/api/v1/schedules', { body: { name: 'qd-cron-own', cron_expression: '0 0 0 * * *', queue_name: 'qd', payload_template: {}, max_retries: 1, timeout_seconds: 7 } });
    assert.deepEqual(await settings((await server.request('POST', `/api/v1/schedules/${own.body.id}/trigger`)).body.job_id), [1, 7]);
    // Given later by an update: from then on the schedule's own.
    await server.request('PUT', `/api/v1/schedules/${plain.body.id}`, { body: { max_retries: 2 } });
    assert.deepEqual(await settings((await server.request('POST', `/api/v1/schedules/${plain.body.id}/trigger`)).body.job_id), [2, 42]);
  });

  it('a queue without config keeps the server defaults (3 retries, 300 s)', async () => {
    const plain = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'qd-unconfigured', payload: {} } });
    assert.deepEqual(await settings(plain.body.id), [3, 300]);
  });
});
