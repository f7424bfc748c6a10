import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { status, type ServiceError } from '@grpc/grpc-js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient, type GrpcTestClient } from '../../../test-support/grpc.js';

let server: TestServer;
let client: GrpcTestClient;
before(async () => {
  server = await startTestServer('grpcworker', { grpcPort: 0 });
  client = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
});
after(async () => {
  client.close();
  await server.close();
});

async function rejects(promise: Promise<unknown>, code: status, details: RegExp): Promise<void> {
  await assert.rejects(promise, (err: ServiceError) => {
    assert.equal(err.code, code, `status ${status[err.code]} (${err.details}), expected ${status[code]}`);
    assert.match(err.details, details);
    return true;
  });
}

const workerRow = async (id: string) => (await server.database.pool.query('SELECT * FROM spool.workers WHERE id = $1', [id])).rows[0];

describe('WorkerService.Register', () => {
  it('registers a healthy worker and answers non-zero lease and heartbeat periods', async () => {
    const response = await client.call('workers', 'Register', {
      queueName: 'emails', hostname: 'host-1.local', workerType: 'nodejs', maxConcurrency: 8, version: '1.0.40', metadata: { region: 'eu' },
    });
    assert.match(response.workerId, /^[0-9a-f-]{36}$/);
    assert.equal(response.leaseDurationSecs, 300);
    assert.equal(response.heartbeatIntervalSecs, 10);
    const row = await workerRow(response.workerId);
    assert.equal(row.organization_id, server.organizationId);
    assert.equal(row.queue_name, 'emails');
    assert.equal(row.hostname, 'host-1.local');
    assert.equal(row.worker_type, 'nodejs');
    assert.equal(row.max_concurrency, 8);
    assert.equal(row.version, '1.0.40');
    assert.deepEqual(row.metadata, { region: 'eu' });
    assert.equal(row.status, 'healthy');
  });

  it('uses defaults for zero and empty fields', async () => {
    const { workerId } = await client.call('workers', 'Register', { queueName: 'emails' });
    const row = await workerRow(workerId);
    assert.equal(row.max_concurrency, 5);
    assert.equal(row.worker_type, null);
    assert.equal(row.version, null);
    assert.ok(row.hostname.length > 0);
    const big = await client.call('workers', 'Register', { queueName: 'emails', hostname: 'h', maxConcurrency: 5000 });
    assert.equal((await workerRow(big.workerId)).max_concurrency, 1000, 'clamped');
  });

  it('validates the queue name and text fields', async () => {
    await rejects(client.call('workers', 'Register', { queueName: '', hostname: 'h' }), status.INVALID_ARGUMENT, /Queue name/);
    await rejects(client.call('workers', 'Register', { queueName: 'a b', hostname: 'h' }), status.INVALID_ARGUMENT, /alphanumeric/);
    await rejects(client.call('workers', 'Register', { queueName: 'q', hostname: 'bad host' }), status.INVALID_ARGUMENT, /hostname/);
    await rejects(client.call('workers', 'Register', { queueName: 'q', hostname: 'h', version: 'v'.repeat(51) }), status.INVALID_ARGUMENT, /version/);
  });
});

describe('WorkerService.Heartbeat', () => {
  it('acknowledges a known worker and records status, load and metadata', async () => {
    const { workerId } = await client.call('workers', 'Register', { queueName: 'q', hostname: 'h' });
    await server.database.pool.query("UPDATE spool.workers SET last_heartbeat = now() - interval '1 minute' WHERE id = $1", [workerId]);
    const response = await client.call('workers', 'Heartbeat', { workerId, currentJobs: 3, status: 'degraded', metadata: { load: 'high' } });
    assert.deepEqual(response, { acknowledged: true, shouldDrain: false });
    const row = await workerRow(workerId);
    assert.equal(row.current_jobs, 3);
    assert.equal(row.status, 'degraded');
    assert.deepEqual(row.metadata, { load: 'high' });
    assert.ok(Date.now() - row.last_heartbeat.getTime() < 30_000);
    await client.call('workers', 'Heartbeat', { workerId, status: 'sleepy' });
    assert.equal((await workerRow(workerId)).status, 'healthy', 'an invalid status becomes healthy');
    assert.deepEqual((await workerRow(workerId)).metadata, { load: 'high' }, 'no metadata keeps the stored one');
  });

  it('answers unknown workers (any id string) with acknowledged:false and an empty id with INVALID_ARGUMENT', async () => {
    for (const workerId of ['nope', randomUUID(), 'x'.repeat(200)]) {
      assert.deepEqual(await client.call('workers', 'Heartbeat', { workerId }), { acknowledged: false, shouldDrain: false });
    }
    await rejects(client.call('workers', 'Heartbeat', { workerId: '' }), status.INVALID_ARGUMENT, /Worker ID is required/);
  });
});

describe('WorkerService.Deregister', () => {
  it('marks the worker offline and gives its processing jobs back', async () => {
    const queueName = `dereg-${randomUUID().slice(0, 8)}`;
    const { workerId } = await client.call('workers', 'Register', { queueName, hostname: 'h' });
    for (let i = 0; i < 3; i++) await client.call('queue', 'Enqueue', { queueName });
    const { jobs } = await client.call('queue', 'Dequeue', { queueName, workerId, batchSize: 2 });
    assert.equal(jobs.length, 2);
    assert.deepEqual(await client.call('workers', 'Deregister', { workerId }), { success: true });
    assert.equal((await workerRow(workerId)).status, 'offline');
    for (const job of jobs) {
      const after = (await client.call('queue', 'GetJob', { jobId: job.id })).job;
      assert.equal(after.status, 'JOB_STATUS_PENDING');
      assert.equal(after.retryCount, 0, 'a release is not a failed attempt');
      assert.equal(after.assignedWorkerId, '');
    }
    const history = await server.database.pool.query("SELECT count(*)::int AS n FROM spool.job_history WHERE event = 'release' AND worker_id = $1", [workerId]);
    assert.equal(history.rows[0].n, 2);
  });

  it('answers unknown workers with success:false', async () => {
    for (const workerId of ['nope', randomUUID()]) {
      assert.deepEqual(await client.call('workers', 'Deregister', { workerId }), { success: false });
    }
  });
});
