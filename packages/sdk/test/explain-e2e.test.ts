/** client.jobs.explain() against the real server, and the fake's answer for the same questions. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { NotFoundError, SpoolClient } from '../src/index.js';
import { FakeSpoolClient } from '../src/testing/index.js';

let server: TestServer;
let client: SpoolClient;
before(async () => {
  server = await startTestServer('sdk_explain');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
});
after(() => server.close());

test('explains a job of a paused queue in camelCase, and a runnable one after resume', async () => {
  const { id } = await client.jobs.create({ queueName: 'sdk-explain', payload: {} });
  await client.queues.pause('sdk-explain', 'maintenance');
  const paused = await client.jobs.explain(id);
  assert.deepEqual([paused.jobId, paused.queueName, paused.status, paused.runnable], [id, 'sdk-explain', 'pending', false]);
  const reason = paused.reasons.find((r) => r.code === 'queue_paused');
  assert.ok(reason, JSON.stringify(paused.reasons));
  assert.equal(reason.pauseReason, 'maintenance');
  assert.equal(typeof reason.pausedAt, 'string');
  assert.match(reason.message, /resume it with POST \/api\/v1\/queues\/sdk-explain\/resume/);

  await client.queues.resume('sdk-explain');
  const resumed = await client.jobs.explain(id);
  assert.equal(resumed.runnable, true);
  assert.equal(resumed.reasons.find((r) => r.code === 'queued_behind')?.ahead, 0);
  await assert.rejects(client.jobs.explain('00000000-0000-4000-8000-000000000000'), NotFoundError);
});

test('the fake explains schedules, the place in line and finished jobs', async () => {
  let now = new Date('2030-01-01T00:00:00Z');
  const spool = new FakeSpoolClient({ now: () => now });
  const later = await spool.jobs.create({ queueName: 'q', payload: {}, scheduledAt: '2030-01-01T01:00:00Z' });
  const first = await spool.jobs.create({ queueName: 'q', payload: {} });
  const second = await spool.jobs.create({ queueName: 'q', payload: {} });
  assert.deepEqual((await spool.jobs.explain(later.id)).reasons.map((r) => [r.code, r.until]), [['scheduled', '2030-01-01T01:00:00.000Z']]);
  assert.equal((await spool.jobs.explain(second.id)).reasons[0]?.ahead, 1);
  const [claimed] = await spool.jobs.claim({ queueName: 'q', workerId: 'w' });
  assert.equal(claimed?.id, first.id);
  assert.deepEqual((await spool.jobs.explain(first.id)).reasons.map((r) => r.code), ['leased']);
  await spool.jobs.complete(first.id, { workerId: 'w', leaseId: claimed!.leaseId });
  const done = await spool.jobs.explain(first.id);
  assert.deepEqual([done.runnable, done.reasons.map((r) => r.code)], [false, ['finished']]);
  now = new Date('2030-01-01T02:00:00Z');
  assert.equal((await spool.jobs.explain(later.id)).runnable, true);
});
