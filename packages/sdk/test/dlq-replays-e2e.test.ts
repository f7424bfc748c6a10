/** client.dlq.replays against the real server, and the fake's answer for the same replay. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { loadDeadLetters } from '../../../test-support/job-fixtures.js';
import { ConflictError, NotFoundError, SpoolClient, ValidationError, type DlqReplay } from '../src/index.js';
import { FakeSpoolClient } from '../src/testing/index.js';

let server: TestServer;
let client: SpoolClient;
before(async () => {
  server = await startTestServer('sdk_replays');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
});
after(() => server.close());

test('creates a paced replay with edits, follows it to the end, lists and cancels', async () => {
  const ids = await loadDeadLetters(server.spool.db, server.organizationId, 'sdk-replay', 100);
  const replay = await client.dlq.replays.create({ queueName: 'sdk-replay', perSecond: 100, edits: { maxRetries: 1, queueName: 'sdk-replay-2' } });
  assert.equal(replay.status, 'running');
  assert.equal(replay.total, 100);
  assert.equal(replay.perSecond, 100);
  assert.deepEqual(replay.edits, { priority: null, maxRetries: 1, queueName: 'sdk-replay-2' });

  const seen: DlqReplay[] = [];
  const finished = await client.dlq.replays.waitFor(replay.id, { intervalMs: 20, onProgress: (r) => seen.push(r) });
  assert.equal(finished.status, 'completed');
  assert.equal(finished.done, 100);
  assert.equal(finished.progress, 100);
  assert.ok(seen.length >= 2, `progress reported ${seen.length} times`);
  assert.ok(seen.every((r, i) => i === 0 || r.done >= seen[i - 1]!.done), 'progress only goes up');
  assert.equal(seen.at(-1)!.status, 'completed');
  const job = await client.jobs.get(ids[0]!);
  assert.deepEqual([job.status, job.queueName, job.maxRetries], ['pending', 'sdk-replay-2', 1]);

  assert.equal((await client.dlq.replays.get(replay.id)).id, replay.id);
  assert.ok((await client.dlq.replays.list({ status: 'completed' })).some((r) => r.id === replay.id));
  await assert.rejects(client.dlq.replays.cancel(replay.id), ConflictError);
  await assert.rejects(client.dlq.replays.get('00000000-0000-4000-8000-000000000000'), NotFoundError);
  await assert.rejects(client.dlq.replays.create({ perSecond: 0 }), ValidationError);

  await loadDeadLetters(server.spool.db, server.organizationId, 'sdk-replay-slow', 50);
  const slow = await client.dlq.replays.create({ queueName: 'sdk-replay-slow', perSecond: 10 });
  const cancelled = await client.dlq.replays.cancel(slow.id);
  assert.equal(cancelled.status, 'cancelled');
  assert.equal((await client.dlq.replays.waitFor(slow.id, { intervalMs: 10 })).status, 'cancelled');
  const aborted = new AbortController();
  aborted.abort(new Error('stop waiting'));
  await assert.rejects(client.dlq.replays.waitFor(slow.id, { signal: aborted.signal }), /stop waiting/);
});

test('the fake replays at once', async () => {
  const spool = new FakeSpoolClient();
  const { id } = await spool.jobs.create({ queueName: 'q', payload: {}, maxRetries: 0 });
  const [claimed] = await spool.jobs.claim({ queueName: 'q', workerId: 'w' });
  await spool.jobs.fail(claimed!.id, { workerId: 'w', error: 'boom' });
  assert.equal((await spool.jobs.get(id)).status, 'deadletter');
  const replay = await spool.dlq.replays.create({ queueName: 'q', perSecond: 5, edits: { priority: 3 } });
  assert.deepEqual([replay.status, replay.total, replay.done], ['completed', 1, 1]);
  const job = await spool.jobs.get(id);
  assert.deepEqual([job.status, job.priority, job.retryCount], ['pending', 3, 0]);
  assert.equal((await spool.dlq.replays.waitFor(replay.id)).status, 'completed');
  assert.equal((await spool.dlq.replays.list()).length, 1);
  await assert.rejects(spool.dlq.replays.cancel(replay.id), ConflictError);
  await assert.rejects(spool.dlq.replays.create({ perSecond: 0 }), ValidationError);
});
