/**
 * Paced DLQ replays over REST (docs/jobs-api.md, "Paced DLQ replays"):
 * POST /jobs/dlq/replays, GET (list, one), DELETE (cancel); validation,
 * the history actor, edits, roles and queue-scoped keys. The contract's
 * POST /jobs/dlq/retry keeps its limit of 100.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { loadDeadLetters } from '../../../test-support/job-fixtures.js';

let server: TestServer;
let admin: { key: string; id: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function makeKey(body: Record<string, unknown>): Promise<{ key: string; id: string }> {
  const created = await server.request('POST', '/api/v1/api-keys', { body: { name: `key ${Math.random()}`, ...body } });
  assert.equal(created.status, 201, created.text);
  return { key: created.body.key, id: created.body.id };
}

function deadLetters(queue: string, count: number, error?: (i: number) => string): Promise<string[]> {
  return loadDeadLetters(server.spool.db, server.organizationId, queue, count, { error });
}

async function waitUntil(id: string, done: (replay: any) => boolean, auth = admin.key): Promise<any> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const got = await server.request('GET', `/api/v1/jobs/dlq/replays/${id}`, { auth });
    assert.equal(got.status, 200, got.text);
    if (done(got.body)) return got.body;
    if (Date.now() > deadline) assert.fail(`replay not there in time: ${got.text}`);
    await sleep(25);
  }
}

before(async () => {
  server = await startTestServer('dlqreplays');
  admin = await makeKey({});
});
after(async () => server?.close());

describe('POST /jobs/dlq/replays', () => {
  it('refuses bad input with a 400 naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ per_second: 0 }, /per_second/],
      [{ per_second: 10_001 }, /per_second/],
      [{ per_second: 1.5 }, /per_second/],
      [{ job_ids: [] }, /job_ids/],
      [{ job_ids: ['not-a-uuid'] }, /job_ids/],
      [{ limit: 0 }, /limit/],
      [{ limit: 100_001 }, /limit/],
      [{ error_contains: '' }, /error_contains/],
      [{ queue_name: 'bad name!' }, /queue_name/],
      [{ created_after: 'yesterday' }, /created_after/],
      [{ created_after: '2026-01-02T00:00:00Z', created_before: '2026-01-01T00:00:00Z' }, /created_after must be earlier/],
      [{ edits: { payload: {} } }, /edits\.payload is not allowed: .*PATCH \/jobs\/\{id\}/],
      [{ edits: { tags: {} } }, /tags is not allowed/],
      [{ edits: { priority: 101 } }, /priority/],
      [{ edits: { max_retries: -1 } }, /max_retries/],
      [{ edits: { queue_name: '' } }, /queue_name/],
      [{ status: 'running' }, /status is not allowed/],
    ];
    for (const [body, message] of cases) {
      const result = await server.request('POST', '/api/v1/jobs/dlq/replays', { body, auth: admin.key });
      assert.equal(result.status, 400, `${JSON.stringify(body)}: ${result.text}`);
      assert.equal(result.body.code, 'VALIDATION_ERROR');
      assert.match(result.body.message, message, JSON.stringify(body));
    }
  });

  it('replays a queue at its pace to the end, with progress, and the key as actor in each job\'s history', async () => {
    const ids = await deadLetters('rest-replay', 120);
    const created = await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { queue_name: 'rest-replay', per_second: 400 }, auth: admin.key });
    assert.equal(created.status, 202, created.text);
    const replay = created.body;
    assert.equal(replay.status, 'running');
    assert.equal(replay.total, 120);
    assert.equal(replay.queue_name, 'rest-replay');
    assert.equal(replay.per_second, 400);
    assert.equal(replay.batch_size, 40);
    assert.equal(replay.limit, 100_000);
    assert.deepEqual(replay.edits, { priority: null, max_retries: null, queue_name: null });
    assert.equal(replay.created_by, `api_key:${admin.id}`);
    assert.ok(replay.remaining > 0);

    // Midway: progress between 0 and 100, a rate and an ETA.
    const midway = await waitUntil(replay.id, (r) => r.done > 0);
    if (midway.status === 'running') {
      assert.ok(midway.progress > 0 && midway.progress < 100, `progress ${midway.progress}`);
      assert.equal(typeof midway.eta_seconds, 'number');
    }
    const finished = await waitUntil(replay.id, (r) => r.status !== 'running');
    assert.equal(finished.status, 'completed');
    assert.equal(finished.done, 120);
    assert.equal(finished.remaining, 0);
    assert.equal(finished.progress, 100);
    assert.equal(finished.eta_seconds, null);
    // Since its creation, and each batch counted for its share of the pace: at most the pace (not 3 batches over 2 intervals), less on a busy machine.
    assert.ok(finished.rate > 0 && finished.rate <= 400, `rate ${finished.rate}`);
    assert.ok(finished.finished_at);

    const job = await server.request('GET', `/api/v1/jobs/${ids[0]}`);
    assert.equal(job.body.status, 'pending');
    assert.equal(job.body.retry_count, 0);
    const history = await server.request('GET', `/api/v1/jobs/${ids[0]}/history`);
    assert.equal(history.status, 200, history.text);
    const entry = history.body.find((e: any) => e.event === 'retry');
    assert.ok(entry, history.text);
    assert.equal(entry.actor, `api_key:${admin.id}`);
    assert.deepEqual(entry.details, { replay_id: replay.id });

    const listed = await server.request('GET', '/api/v1/jobs/dlq/replays', { auth: admin.key });
    assert.equal(listed.status, 200);
    assert.ok(listed.body.some((r: any) => r.id === replay.id && r.status === 'completed'));
    const byStatus = await server.request('GET', '/api/v1/jobs/dlq/replays?status=running');
    assert.ok(!byStatus.body.some((r: any) => r.id === replay.id));
    assert.equal((await server.request('GET', '/api/v1/jobs/dlq/replays?status=done')).status, 400);
    assert.equal((await server.request('GET', '/api/v1/jobs/dlq/replays?limit=101')).status, 400);

    // A finished replay cannot be cancelled.
    const late = await server.request('DELETE', `/api/v1/jobs/dlq/replays/${replay.id}`);
    assert.equal(late.status, 409);
    assert.match(late.body.message, /completed/);
  });

  it('applies the edits and filters; cancel stops it and answers again the same', async () => {
    await deadLetters('rest-edit', 6, (i) => (i < 3 ? 'SMTP timeout' : 'bad address'));
    const created = await server.request('POST', '/api/v1/jobs/dlq/replays', {
      body: { queue_name: 'rest-edit', error_contains: 'smtp', edits: { priority: 5, queue_name: 'rest-edit-fixed' } },
    });
    assert.equal(created.status, 202, created.text);
    assert.equal(created.body.total, 3);
    assert.equal(created.body.batch_size, 1000);
    assert.deepEqual(created.body.edits, { priority: 5, max_retries: null, queue_name: 'rest-edit-fixed' });
    await waitUntil(created.body.id, (r) => r.status === 'completed');
    const moved = await server.request('GET', '/api/v1/jobs?queue_name=rest-edit-fixed');
    assert.equal(moved.body.length, 3);
    assert.ok(moved.body.every((j: any) => j.priority === 5 && j.status === 'pending'));
    const left = await server.request('GET', '/api/v1/jobs/dlq?queue_name=rest-edit');
    assert.equal(left.body.length, 3, 'the other errors stay dead-lettered');

    await deadLetters('rest-cancel', 100);
    const slow = await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { queue_name: 'rest-cancel', per_second: 20 } });
    assert.equal(slow.status, 202);
    await waitUntil(slow.body.id, (r) => r.done > 0);
    const cancelled = await server.request('DELETE', `/api/v1/jobs/dlq/replays/${slow.body.id}`, { auth: admin.key });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.equal(cancelled.body.cancelled_by, `api_key:${admin.id}`);
    assert.ok(cancelled.body.remaining > 0);
    assert.equal(cancelled.body.eta_seconds, null);
    const again = await server.request('DELETE', `/api/v1/jobs/dlq/replays/${slow.body.id}`);
    assert.equal(again.status, 200);
    assert.equal(again.body.done, cancelled.body.done);
    await sleep(200);
    const after = await server.request('GET', `/api/v1/jobs/dlq/replays/${slow.body.id}`);
    assert.equal(after.body.done, cancelled.body.done, 'no batch after the cancel');
    const dlq = await server.request('GET', '/api/v1/jobs/dlq?queue_name=rest-cancel&limit=100');
    assert.equal(dlq.body.length, 100 - cancelled.body.done);
  });

  it('answers 404 for unknown or malformed ids, 202 completed for a replay that matches nothing', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope']) {
      assert.equal((await server.request('GET', `/api/v1/jobs/dlq/replays/${id}`)).status, 404);
      assert.equal((await server.request('DELETE', `/api/v1/jobs/dlq/replays/${id}`)).status, 404);
    }
    const empty = await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { queue_name: 'rest-nothing-here' } });
    assert.equal(empty.status, 202);
    assert.equal(empty.body.status, 'completed');
    assert.equal(empty.body.total, 0);
    assert.equal(empty.body.progress, 100);
  });

  it('needs the role of a DLQ retry to start or cancel, and that of the DLQ list to read', async () => {
    const readOnly = await makeKey({ role: 'read_only' });
    const producer = await makeKey({ role: 'producer' });
    const worker = await makeKey({ role: 'worker' });
    for (const key of [readOnly, producer, worker]) {
      const result = await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { queue_name: 'rest-role' }, auth: key.key });
      assert.equal(result.status, 403, result.text);
      assert.match(result.body.message, /dlq\.replay/);
    }
    const replay = (await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { queue_name: 'rest-role' } })).body;
    assert.equal((await server.request('GET', `/api/v1/jobs/dlq/replays/${replay.id}`, { auth: readOnly.key })).status, 200);
    assert.equal((await server.request('GET', '/api/v1/jobs/dlq/replays', { auth: producer.key })).status, 200);
    assert.equal((await server.request('GET', '/api/v1/jobs/dlq/replays', { auth: worker.key })).status, 403);
    assert.equal((await server.request('DELETE', `/api/v1/jobs/dlq/replays/${replay.id}`, { auth: readOnly.key })).status, 403);
  });

  it('a queue-scoped key replays only its queues and sees only the replays within them', async () => {
    const mine = await deadLetters('scoped-mine', 4);
    const theirs = await deadLetters('scoped-theirs', 3);
    const scoped = await makeKey({ queues: ['scoped-mine'] });
    // Naming another queue, or moving jobs to one: 403.
    for (const body of [{ queue_name: 'scoped-theirs' }, { queue_name: 'scoped-mine', edits: { queue_name: 'scoped-theirs' } }]) {
      const refused = await server.request('POST', '/api/v1/jobs/dlq/replays', { body, auth: scoped.key });
      assert.equal(refused.status, 403, JSON.stringify(body));
      assert.equal(refused.body.code, 'ACCESS_DENIED');
    }
    // Without a queue: the key's queues only (here the oldest 3 of them).
    const all = await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { limit: 3 }, auth: scoped.key });
    assert.equal(all.status, 202);
    assert.equal(all.body.total, 3);
    await waitUntil(all.body.id, (r) => r.status === 'completed', scoped.key);
    // Ids of other queues are left out.
    const byIds = await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { job_ids: [theirs[0], mine[3]], per_second: 1 }, auth: scoped.key });
    assert.equal(byIds.status, 202);
    assert.equal(byIds.body.total, 1);
    assert.equal(byIds.body.job_ids_count, 2);
    await waitUntil(byIds.body.id, (r) => r.status === 'completed', scoped.key);
    assert.equal((await server.request('GET', '/api/v1/jobs/dlq?queue_name=scoped-mine')).body.length, 0);
    const theirsLeft = await server.request('GET', '/api/v1/jobs/dlq?queue_name=scoped-theirs');
    assert.equal(theirsLeft.body.length, 3, 'other queues untouched');

    // The organization's replay of another queue (or of every queue) is not the scoped key's to see or cancel.
    const other = (await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { queue_name: 'scoped-theirs', per_second: 1 } })).body;
    const everything = (await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { per_second: 1 } })).body;
    for (const replay of [other, everything]) {
      assert.equal((await server.request('GET', `/api/v1/jobs/dlq/replays/${replay.id}`, { auth: scoped.key })).status, 404);
      assert.equal((await server.request('DELETE', `/api/v1/jobs/dlq/replays/${replay.id}`, { auth: scoped.key })).status, 404);
      assert.equal((await server.request('GET', `/api/v1/jobs/dlq/replays/${replay.id}`)).body.status, 'running', 'untouched');
    }
    const seen = (await server.request('GET', '/api/v1/jobs/dlq/replays?limit=100', { auth: scoped.key })).body.map((r: any) => r.id);
    assert.deepEqual(new Set(seen), new Set([byIds.body.id, all.body.id]));
    const seenByOrg = (await server.request('GET', '/api/v1/jobs/dlq/replays?limit=100')).body.map((r: any) => r.id);
    assert.ok([byIds.body.id, all.body.id, other.id, everything.id].every((id) => seenByOrg.includes(id)), 'a key of every queue sees them all');
    // The scoped key cancels its own.
    await deadLetters('scoped-mine', 2);
    const own = (await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { queue_name: 'scoped-mine', per_second: 1 }, auth: scoped.key })).body;
    assert.equal((await server.request('DELETE', `/api/v1/jobs/dlq/replays/${own.id}`, { auth: scoped.key })).status, 200);
    for (const replay of [other, everything]) assert.equal((await server.request('DELETE', `/api/v1/jobs/dlq/replays/${replay.id}`)).status, 200);
  });

  it('leaves the contract\'s POST /jobs/dlq/retry as it was: at most 100 per call', async () => {
    const over = await server.request('POST', '/api/v1/jobs/dlq/retry', { body: { limit: 101 } });
    assert.equal(over.status, 400);
    await deadLetters('contract-retry', 3);
    const retried = await server.request('POST', '/api/v1/jobs/dlq/retry', { body: { queue_name: 'contract-retry' } });
    assert.equal(retried.status, 200);
    assert.deepEqual(Object.keys(retried.body).sort(), ['retried_count', 'retried_jobs']);
    assert.equal(retried.body.retried_count, 3);
  });
});
