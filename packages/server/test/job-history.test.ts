import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { MISSING_ID, assertError, claim, enqueue } from './jobs-helpers.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('jobhistory');
});
after(async () => server.close());

const req = (method: string, path: string, body?: unknown, auth?: string) => server.request(method, `/api/v1${path}`, { body, auth });

describe('GET /jobs/{id}/history (extension)', () => {
  it('lists every transition oldest first, with worker, lease and error message', async () => {
    await req('PUT', '/queues/hist-q/config', { backoff_base_ms: 0, backoff_max_ms: 0, backoff_jitter_ms: 0 });
    const id = await enqueue(server, { queue_name: 'hist-q', max_retries: 1 });
    const [first] = await claim(server, { queue_name: 'hist-q', worker_id: 'w-a' });
    assert.equal((await req('POST', `/jobs/${id}/fail`, { worker_id: 'w-a', lease_id: first.lease_id, error: 'disk full' })).status, 200);
    const [second] = await claim(server, { queue_name: 'hist-q', worker_id: 'w-b' });
    assert.equal(second.id, id);
    assert.equal((await req('POST', `/jobs/${id}/complete`, { worker_id: 'w-b', lease_id: second.lease_id })).status, 200);

    const res = await req('GET', `/jobs/${id}/history`);
    assert.equal(res.status, 200, res.text);
    const rows = res.body as any[];
    assert.deepEqual(rows.map((r) => [r.event, r.from_status, r.to_status]), [
      ['create', null, 'pending'],
      ['claim', 'pending', 'processing'],
      ['fail_retry', 'processing', 'pending'],
      ['claim', 'pending', 'processing'],
      ['complete', 'processing', 'completed'],
    ]);
    assert.deepEqual(rows.map((r) => r.worker_id), [null, 'w-a', 'w-a', 'w-b', 'w-b']);
    assert.equal(rows[1].lease_id, first.lease_id);
    assert.equal(rows[3].lease_id, second.lease_id);
    assert.equal(rows[2].message, 'disk full');
    for (let i = 1; i < rows.length; i++) {
      assert.ok(rows[i].id > rows[i - 1].id, 'ids increase');
      assert.ok(Date.parse(rows[i].created_at) >= Date.parse(rows[i - 1].created_at), 'times do not go back');
    }
    for (const row of rows) assert.deepEqual(Object.keys(row).sort(), ['actor', 'created_at', 'details', 'event', 'from_status', 'id', 'lease_id', 'message', 'to_status', 'worker_id']);

    const limited = await req('GET', `/jobs/${id}/history?limit=2`);
    assert.deepEqual(limited.body.map((r: any) => r.event), ['create', 'claim']);
    assert.equal((await req('GET', `/jobs/${id}/history?limit=abc`)).status, 400, "an unreadable limit of an extension is refused (warnings.test.ts)");
    assert.equal((await req('GET', `/jobs/${id}/history`)).body.length, 5, 'no limit: the default');
  });

  it('is a 404 for unknown ids, malformed ids and other organizations\' jobs', async () => {
    assertError(await req('GET', `/jobs/${MISSING_ID}/history`), 404, 'NOT_FOUND');
    assertError(await req('GET', '/jobs/not-a-uuid/history'), 404, 'NOT_FOUND');
    const id = await enqueue(server, { queue_name: 'hist-q' });
    const other = await server.createOrganization();
    assertError(await req('GET', `/jobs/${id}/history`, undefined, other.apiKey), 404, 'NOT_FOUND');
    assert.equal((await req('GET', `/jobs/${id.toUpperCase()}/history`)).status, 200, 'ids are case-insensitive');
  });

  it('needs credentials', async () => {
    const id = await enqueue(server, { queue_name: 'hist-q' });
    assert.equal((await server.request('GET', `/api/v1/jobs/${id}/history`, { auth: null })).status, 401);
  });
});
