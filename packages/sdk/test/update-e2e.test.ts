/** client.jobs.update(), setPriority() and history() against the real server, and the fake's answer for the same edits. */
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
  assert.deepEqual(await client.jobs.setPriority(id, 9), { jobId: id, oldPriority: 5, newPriority: 9 });

  // The history names who changed what, in camelCase; details keep the wire's field names.
  const keyId = (await server.spool.db.query<{ id: string }>('SELECT id::text FROM spool.api_keys WHERE organization_id = $1', [server.organizationId])).rows[0]!.id;
  const history = await client.jobs.history(id);
  assert.deepEqual(history.map((h) => h.event), ['create', 'edit', 'edit', 'edit']);
  const [, first, , priority] = history;
  assert.equal(first!.actor, `api_key:${keyId}`);
  assert.deepEqual([first!.fromStatus, first!.toStatus], ['pending', 'scheduled']);
  assert.deepEqual((first!.details as { fields: string[] }).fields.sort(), ['max_retries', 'payload', 'priority', 'queue_name', 'scheduled_at']);
  assert.deepEqual((first!.details as { from: Record<string, unknown> }).from.queue_name, 'sdk-update');
  assert.equal(priority!.actor, `api_key:${keyId}`);
  assert.deepEqual(priority!.details, { fields: ['priority'], from: { priority: 5 }, to: { priority: 9 } });
  assert.equal(history[0]!.actor, null);
  assert.deepEqual((await client.jobs.history(id, { limit: 1 })).map((h) => h.event), ['create']);

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
