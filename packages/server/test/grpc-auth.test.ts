import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { status, type ServiceError } from '@grpc/grpc-js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient, toStruct, type Auth, type GrpcTestClient } from '../../../test-support/grpc.js';

let server: TestServer;
let client: GrpcTestClient;
let other: { organizationId: string; apiKey: string };
before(async () => {
  server = await startTestServer('grpcauth', { grpcPort: 0 });
  client = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
  other = await server.createOrganization();
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

/** Every unary method with a harmless request. */
const UNARY: [service: 'queue' | 'workers', method: string, request: Record<string, unknown>][] = [
  ['queue', 'Enqueue', { queueName: 'q', payload: toStruct({}) }],
  ['queue', 'Dequeue', { queueName: 'q', workerId: 'w' }],
  ['queue', 'Complete', { jobId: randomUUID(), workerId: 'w' }],
  ['queue', 'Fail', { jobId: randomUUID(), workerId: 'w', error: 'e' }],
  ['queue', 'RenewLease', { jobId: randomUUID(), workerId: 'w', extensionSecs: 30 }],
  ['queue', 'GetJob', { jobId: randomUUID() }],
  ['queue', 'GetQueueStats', { queueName: 'q' }],
  ['workers', 'Register', { queueName: 'q', hostname: 'h' }],
  ['workers', 'Heartbeat', { workerId: randomUUID() }],
  ['workers', 'Deregister', { workerId: randomUUID() }],
];

describe('gRPC authentication', () => {
  it('refuses every method without a key, or with an unknown or malformed one, with UNAUTHENTICATED "Invalid"', async () => {
    const bad: Auth[] = [null, { apiKey: 'sk_test_doesnotexist' }, { apiKey: 'garbage' }, { bearer: 'sk_live_nope' }, { bearer: 'eyJhbGciOiJIUzI1NiJ9.e30.x' }];
    for (const [service, method, request] of UNARY) {
      for (const auth of bad) {
        await rejects(client.call(service, method, request, auth), status.UNAUTHENTICATED, /Invalid/);
      }
    }
  });

  it('refuses a revoked key', async () => {
    const revoked = await server.createOrganization();
    await server.database.pool.query('UPDATE spool.api_keys SET is_active = false WHERE organization_id = $1', [revoked.organizationId]);
    await rejects(client.call('queue', 'GetJob', { jobId: 'x' }, { apiKey: revoked.apiKey }), status.UNAUTHENTICATED, /Invalid/);
  });

  it('refuses streams at call start', async () => {
    const stream = client.queue.StreamJobs({ queueName: 'q', workerId: 'w' }, client.metadata({ apiKey: 'sk_test_wrong' }));
    const streamError = await new Promise<ServiceError>((resolve) => stream.on('error', resolve));
    assert.equal(streamError.code, status.UNAUTHENTICATED);
    assert.match(streamError.details, /Invalid/);

    const duplex = client.queue.ProcessJobs(client.metadata(null));
    duplex.write({ dequeue: { queueName: 'q', workerId: 'w' } });
    const duplexError = await new Promise<ServiceError>((resolve) => duplex.on('error', resolve));
    assert.equal(duplexError.code, status.UNAUTHENTICATED);
    assert.match(duplexError.details, /Invalid/);
  });

  it('accepts the key as x-api-key or as authorization: Bearer', async () => {
    assert.equal((await client.call('queue', 'GetJob', { jobId: 'x' }, { apiKey: server.apiKey })).job, null);
    assert.equal((await client.call('queue', 'GetJob', { jobId: 'x' }, { bearer: server.apiKey })).job, null);
  });

  it('refuses a key restricted to other queues with PERMISSION_DENIED', async () => {
    const limited = await server.createOrganization();
    await server.database.pool.query("UPDATE spool.api_keys SET queues = '{allowed,reports*}' WHERE organization_id = $1", [limited.organizationId]);
    const auth = { apiKey: limited.apiKey };
    assert.equal((await client.call('queue', 'Enqueue', { queueName: 'reports-daily' }, auth)).created, true);
    await rejects(client.call('queue', 'Enqueue', { queueName: 'secret' }, auth), status.PERMISSION_DENIED, /secret/);
    await rejects(client.call('queue', 'Dequeue', { queueName: 'secret', workerId: 'w' }, auth), status.PERMISSION_DENIED, /secret/);
    await rejects(client.call('workers', 'Register', { queueName: 'secret', hostname: 'h' }, auth), status.PERMISSION_DENIED, /secret/);
  });
});

describe('gRPC tenancy', () => {
  it("treats another organization's job and worker as not found", async () => {
    const queueName = `tenancy-${randomUUID().slice(0, 8)}`;
    const { jobId } = await client.call('queue', 'Enqueue', { queueName, payload: toStruct({ secret: true }) });
    const theirs = { apiKey: other.apiKey };
    assert.equal((await client.call('queue', 'GetJob', { jobId }, theirs)).job, null);
    assert.deepEqual(await client.call('queue', 'Dequeue', { queueName, workerId: 'thief' }, theirs), { jobs: [] });
    assert.equal((await client.call('queue', 'GetQueueStats', { queueName }, theirs)).total, '0');

    const { jobs } = await client.call('queue', 'Dequeue', { queueName, workerId: 'w' });
    assert.equal(jobs[0].id, jobId);
    await rejects(client.call('queue', 'Complete', { jobId, workerId: 'w' }, theirs), status.NOT_FOUND, /not found/);
    await rejects(client.call('queue', 'Fail', { jobId, workerId: 'w', error: 'x', retry: true }, theirs), status.NOT_FOUND, /not found/);
    assert.equal((await client.call('queue', 'RenewLease', { jobId, workerId: 'w', extensionSecs: 30 }, theirs)).success, false);
    assert.equal((await client.call('queue', 'GetJob', { jobId })).job.status, 'JOB_STATUS_PROCESSING', 'untouched');

    const { workerId } = await client.call('workers', 'Register', { queueName, hostname: 'mine' });
    assert.equal((await client.call('workers', 'Heartbeat', { workerId }, theirs)).acknowledged, false);
    assert.equal((await client.call('workers', 'Deregister', { workerId }, theirs)).success, false);
    assert.equal((await client.call('workers', 'Heartbeat', { workerId })).acknowledged, true, 'still registered');
  });
});
