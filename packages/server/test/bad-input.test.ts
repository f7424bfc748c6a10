/**
 * Numbers JSON cannot hold: a literal too large for a double
 * (1e999999) parses as Infinity and used to be stored as null, and a gRPC
 * Struct can carry NaN and ±Infinity as doubles. Both are refused with a
 * 400 / INVALID_ARGUMENT naming the field, and nothing is stored.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient, toStruct, type GrpcTestClient } from '../../../test-support/grpc.js';
import { enqueueAndClaim } from './jobs-helpers.js';

let server: TestServer;
let client: GrpcTestClient;
before(async () => {
  server = await startTestServer('badinput', { grpcPort: 0 });
  client = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
});
after(async () => {
  client.close();
  await server.close();
});

async function jobsIn(queue: string): Promise<number> {
  const rows = await server.spool.db.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = $1', [queue]);
  return rows.rows[0]!.n;
}

function assertRefused(response: { status: number; body: any; text: string }, field: RegExp): void {
  assert.equal(response.status, 400, response.text);
  assert.equal(response.body.code, 'VALIDATION_ERROR');
  assert.match(response.body.message, field);
  assert.match(response.body.message, /too large to store.*send it as a string/);
}

describe('numbers JSON cannot hold, over REST', () => {
  it('refuses 1e999999, -1e400 and a 400-digit integer in a payload instead of storing null', async () => {
    for (const [literal, path] of [['1e999999', /payload\.big/], ['-1E400', /payload\.big/], ['9'.repeat(400), /payload\.big/]] as const) {
      const response = await server.request('POST', '/api/v1/jobs', { rawBody: `{"queue_name":"inf-rest","payload":{"ok":1,"big":${literal}}}` });
      assertRefused(response, path);
    }
    const nested = await server.request('POST', '/api/v1/jobs', { rawBody: '{"queue_name":"inf-rest","payload":{"list":[1,{"x":[2, 1e309]}]}}' });
    assertRefused(nested, /payload\.list\[1\]\.x\[1\]/);
    assert.equal(await jobsIn('inf-rest'), 0, 'nothing was stored');
  });

  it('still accepts exponents and long decimals that fit a double, and the words true/false', async () => {
    const response = await server.request('POST', '/api/v1/jobs', { rawBody: `{"queue_name":"inf-ok","payload":{"a":1e300,"b":-2.5E-3,"c":0.${'0'.repeat(400)}1,"d":true,"e":false,"s":"1e999999"}}` });
    assert.equal(response.status, 201, response.text);
    const job = await server.request('GET', `/api/v1/jobs/${response.body.id}`);
    assert.deepEqual(job.body.payload, { a: 1e300, b: -2.5e-3, c: 0, d: true, e: false, s: '1e999999' });
  });

  it('refuses an infinite number in a completion result and in bulk items; the job stays processing', async () => {
    const job = await enqueueAndClaim(server, 'inf-result');
    const response = await server.request('POST', `/api/v1/jobs/${job.id}/complete`, { rawBody: `{"worker_id":"w1","lease_id":"${job.lease_id}","result":{"n":1e999999}}` });
    assertRefused(response, /result\.n/);
    const after = await server.request('GET', `/api/v1/jobs/${job.id}`);
    assert.equal(after.body.status, 'processing');
    const bulk = await server.request('POST', '/api/v1/jobs/bulk', { rawBody: '{"queue_name":"inf-bulk","jobs":[{"payload":{}},{"payload":{"n":1e999}}]}' });
    assertRefused(bulk, /jobs\[1\]\.payload\.n/);
    assert.equal(await jobsIn('inf-bulk'), 0);
  });
});

describe('numbers JSON cannot hold, through incoming webhooks', () => {
  it('refuses an infinite number in a custom ingestion body with 400; nothing is enqueued', async () => {
    const token = (await server.request('POST', '/api/v1/organizations/webhook-token/regenerate')).body.token as string;
    const send = (rawBody: string) => server.request('POST', `/api/v1/webhooks/${server.organizationId}/custom`, { auth: null, headers: { 'x-webhook-token': token }, rawBody });
    assertRefused(await send('{"queue_name":"inf-ingest","payload":{"n":1e999999}}'), /payload\.n/);
    assert.equal(await jobsIn('inf-ingest'), 0);
    assert.equal((await send('{"queue_name":"inf-ingest","payload":{"n":1e300}}')).status, 200);
    assert.equal(await jobsIn('inf-ingest'), 1);
  });
});

describe('numbers JSON cannot hold, over gRPC', () => {
  it('refuses NaN and ±Infinity in an Enqueue payload with INVALID_ARGUMENT naming the field', async () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      await assert.rejects(client.call('queue', 'Enqueue', { queueName: 'inf-grpc', payload: toStruct({ ok: 1, nested: { v: value } }) }), (err: { code: number; details: string }) => {
        assert.equal(err.code, status.INVALID_ARGUMENT, err.details);
        assert.match(err.details, /payload holds a number that is NaN or infinite/);
        return true;
      });
    }
    assert.equal(await jobsIn('inf-grpc'), 0);
  });

  it('refuses NaN in a Complete result; the job stays processing', async () => {
    const job = await enqueueAndClaim(server, 'inf-grpc-result', {}, 'worker-g');
    await assert.rejects(client.call('queue', 'Complete', { jobId: job.id, workerId: 'worker-g', leaseId: job.lease_id, result: toStruct({ score: Number.NaN }) }), (err: { code: number; details: string }) => {
      assert.equal(err.code, status.INVALID_ARGUMENT, err.details);
      assert.match(err.details, /result holds a number that is NaN or infinite/);
      return true;
    });
    const after = await server.request('GET', `/api/v1/jobs/${job.id}`);
    assert.equal(after.body.status, 'processing');
  });
});
