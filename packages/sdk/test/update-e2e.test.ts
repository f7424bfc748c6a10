/** client.jobs.update() against the real server, and the fake's answer for the same edits. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { ConflictError, SpoolClient, ValidationError } from '../src/index.js';
import { FakeSpoolClient } from '../src/testing/index.js';

let server: TestServer;
let client: SpoolClient;
before(async () => {
  server = await startTestServer('sdk_update');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
});
after(() => server.close());

test('edits a job in camelCase, payload keys untouched; a processing job is a ConflictError', async () => {
  const { id } = await client.jobs.create({ queueName: 'sdk-update', payload: { old: true } });
  const later = new Date(Date.now() + 3_600_000);
  const job = await client.jobs.update(id, { payload: { snake_key: 1 }, priority: 5, maxRetries: 7, queueName: 'sdk-update-2', scheduledAt: later });
  assert.deepEqual([job.id, job.queueName, job.priority, job.maxRetries, job.status], [id, 'sdk-update-2', 5, 7, 'scheduled']);
  assert.deepEqual(job.payload, { snake_key: 1 });
  assert.equal(job.scheduledAt, later.toISOString());
  assert.equal((await client.jobs.update(id, { scheduledAt: null })).status, 'pending');

  await assert.rejects(client.jobs.update(id, {}), ValidationError);
  const [claimed] = await client.jobs.claim({ queueName: 'sdk-update-2', workerId: 'w' });
  assert.equal(claimed?.id, id);
  await assert.rejects(client.jobs.update(id, { priority: 1 }), ConflictError);
});

test('the fake edits the same way', async () => {
  const spool = new FakeSpoolClient({ now: () => new Date('2030-01-01T00:00:00Z') });
  const { id } = await spool.jobs.create({ queueName: 'q', payload: {} });
  const edited = await spool.jobs.update(id, { payload: { a: 1 }, queueName: 'r', scheduledAt: '2030-01-01T01:00:00Z' });
  assert.deepEqual([edited.queueName, edited.status, edited.payload], ['r', 'scheduled', { a: 1 }]);
  assert.equal((await spool.jobs.update(id, { scheduledAt: null })).status, 'pending');
  await assert.rejects(spool.jobs.update(id, {}), ValidationError);
});
