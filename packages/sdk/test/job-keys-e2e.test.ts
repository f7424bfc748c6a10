/** Job keys through the SDK against the real server, and the fake's answers for the same enqueues. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { SpoolClient, ValidationError } from '../src/index.js';
import { FakeSpoolClient } from '../src/testing/index.js';

let server: TestServer;
let client: SpoolClient;
before(async () => {
  server = await startTestServer('sdk_job_keys');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
});
after(() => server.close());

test('jobKey in camelCase: debounce and throttle outcomes, single and bulk; the job shows its key', async () => {
  const first = await client.jobs.create({ queueName: 'sdk-keys', payload: { v: 1 }, jobKey: { key: 'doc', mode: 'debounce', windowSecs: 30, maxWaitSecs: 60 } });
  assert.deepEqual(first, { id: first.id, created: true, keyOutcome: 'created' });
  const second = await client.jobs.create({ queueName: 'sdk-keys', payload: { v: 2 }, jobKey: { key: 'doc', mode: 'debounce', windowSecs: 30 } });
  assert.deepEqual(second, { id: first.id, created: false, keyOutcome: 'debounced' });
  const job = await client.jobs.get(first.id);
  assert.deepEqual([job.jobKey, job.jobKeyMode, job.status, job.payload], ['doc', 'debounce', 'scheduled', { v: 2 }]);

  const bulk = await client.jobs.bulk({
    queueName: 'sdk-keys',
    jobs: [
      { payload: {}, jobKey: { key: 't', mode: 'throttle', windowSecs: 60 } },
      { payload: {}, jobKey: { key: 't', mode: 'throttle', windowSecs: 60 } },
    ],
  });
  assert.deepEqual(bulk.succeeded.map((s) => s.keyOutcome), ['created', 'throttled']);
  assert.equal(bulk.succeeded[1]!.jobId, bulk.succeeded[0]!.jobId);

  await assert.rejects(client.jobs.create({ queueName: 'sdk-keys', payload: {}, jobKey: { key: 'x', mode: 'throttle' } as never }), ValidationError);
});

test('the fake applies the same policies', async () => {
  let now = Date.parse('2030-01-01T00:00:00Z');
  const spool = new FakeSpoolClient({ now: () => new Date(now) });
  const a = await spool.jobs.create({ queueName: 'q', payload: 1, jobKey: { key: 'k', mode: 'dedupe' } });
  assert.equal((await spool.jobs.create({ queueName: 'q', payload: 2, jobKey: { key: 'k', mode: 'dedupe' } })).keyOutcome, 'deduplicated');
  const d = await spool.jobs.create({ queueName: 'q', payload: 1, jobKey: { key: 'd', mode: 'debounce', windowSecs: 10, maxWaitSecs: 15 } });
  now += 8_000;
  assert.deepEqual(await spool.jobs.create({ queueName: 'q', payload: 2, jobKey: { key: 'd', mode: 'debounce', windowSecs: 10, maxWaitSecs: 15 } }), { id: d.id, created: false, keyOutcome: 'debounced' });
  assert.equal((await spool.jobs.get(d.id)).scheduledAt, '2030-01-01T00:00:15.000Z', 'capped at the first enqueue + maxWaitSecs');
  const r = await spool.jobs.create({ queueName: 'q', payload: 1, jobKey: { key: 'r', mode: 'replace' } });
  assert.equal((await spool.jobs.create({ queueName: 'q', payload: 9, jobKey: { key: 'r', mode: 'replace' } })).keyOutcome, 'replaced');
  assert.equal((await spool.jobs.get(r.id)).payload, 9);
  assert.notEqual(a.id, d.id);
});
