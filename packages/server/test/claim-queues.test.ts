/**
 * POST /jobs/claim with queue_names (extension): one claim across several
 * queues, over REST. The engine's tests (packages/engine/test/claim-queues)
 * hold the flow-control limits under concurrent claimers.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { ClaimWaiters, claimWithWait } from '../src/claim-waiters.js';
import { assertError, claim, enqueue, restrictedKey } from './jobs-helpers.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('claim-queues');
});
after(async () => server?.close());

const claimRaw = (body: Record<string, unknown>, auth?: string) =>
  server.request('POST', '/api/v1/jobs/claim', { body: { worker_id: 'mq', ...body }, auth });

describe('POST /jobs/claim with queue_names (extension)', () => {
  it('takes the best jobs across the queues: priority first, then age, as one queue would', async () => {
    const made: { id: string; priority: number; n: number }[] = [];
    const plan: [string, number][] = [['mq-a', 0], ['mq-b', 0], ['mq-a', 10], ['mq-b', 10], ['mq-c', 0], ['mq-a', 0], ['mq-b', 20]];
    for (const [n, [queue, priority]] of plan.entries()) {
      made.push({ id: await enqueue(server, { queue_name: queue, priority }), priority, n });
      await sleep(2); // distinct created_at: age decides within a priority
    }
    const expected = [...made].sort((a, b) => b.priority - a.priority || a.n - b.n).map((j) => j.id);
    const first = await claim(server, { queue_names: ['mq-a', 'mq-b', 'mq-c'], limit: 3, lease_duration_secs: 60 });
    assert.deepEqual(first.map((j) => j.id), expected.slice(0, 3));
    assert.deepEqual(first.map((j) => j.queue_name), ['mq-b', 'mq-a', 'mq-b']);
    assert.ok(first.every((j) => j.status === 'processing' && typeof j.lease_id === 'string'));
    const rest = await claim(server, { queue_names: ['mq-c', 'mq-a', 'mq-b'], limit: 100 });
    assert.deepEqual(rest.map((j) => j.id), expected.slice(3));
    assert.deepEqual(await claim(server, { queue_names: ['mq-a', 'mq-b', 'mq-c'], limit: 10 }), []);
    // The jobs complete as usual.
    const done = await server.request('POST', '/api/v1/jobs/complete', { body: { worker_id: 'w1', items: rest.map((j) => ({ job_id: j.id, lease_id: j.lease_id })) } });
    assert.equal(done.status, 200, done.text);
    assert.ok(done.body.results.every((r: { success: boolean }) => r.success));
  });

  it('leaves a paused queue alone', async () => {
    const older = await enqueue(server, { queue_name: 'mq-paused' });
    const newer = await enqueue(server, { queue_name: 'mq-open' });
    assert.equal((await server.request('POST', '/api/v1/queues/mq-paused/pause', { body: {} })).status, 200);
    assert.deepEqual((await claim(server, { queue_names: ['mq-paused', 'mq-open'], limit: 10 })).map((j) => j.id), [newer]);
    assert.equal((await server.request('POST', '/api/v1/queues/mq-paused/resume', { body: {} })).status, 200);
    assert.deepEqual((await claim(server, { queue_names: ['mq-paused', 'mq-open'], limit: 10 })).map((j) => j.id), [older]);
  });

  it('answers 400 naming the field for no queue, both fields, and bad lists', async () => {
    assertError(await claimRaw({}), 400, 'VALIDATION_ERROR', /queue_name is required/);
    assertError(await claimRaw({ queue_name: 'mq-a', queue_names: ['mq-b'] }), 400, 'VALIDATION_ERROR', /queue_name and queue_names cannot both/);
    assertError(await claimRaw({ queue_names: [] }), 400, 'VALIDATION_ERROR', /^queue_names must NOT have fewer than 1 items/);
    assertError(await claimRaw({ queue_names: Array.from({ length: 33 }, (_, i) => `mq-${i}`) }), 400, 'VALIDATION_ERROR', /^queue_names must NOT have more than 32 items/);
    assertError(await claimRaw({ queue_names: ['mq-a', 'mq-a'] }), 400, 'VALIDATION_ERROR', /^queue_names must NOT have duplicate items/);
    assertError(await claimRaw({ queue_names: ['mq-a', 'bad name'] }), 400, 'VALIDATION_ERROR', /^queue_names\.1 must match pattern/);
    assertError(await claimRaw({ queue_names: 'mq-a' }), 400, 'VALIDATION_ERROR', /^queue_names must be array/);
    // 32 is allowed.
    assert.equal((await claimRaw({ queue_names: Array.from({ length: 32 }, (_, i) => `mq-many-${i}`) })).status, 200);
  });

  it('needs a queue-scoped key to reach every named queue (403 naming the first it may not use)', async () => {
    const key = await restrictedKey(server, ['mq-scope-ok*']);
    const mine = await enqueue(server, { queue_name: 'mq-scope-ok-1' });
    await enqueue(server, { queue_name: 'mq-scope-no' });
    const refused = await claimRaw({ queue_names: ['mq-scope-ok-1', 'mq-scope-no', 'mq-scope-other'] }, key);
    assertError(refused, 403, 'ACCESS_DENIED', /"mq-scope-no"/);
    assert.doesNotMatch(refused.body.message, /mq-scope-other/);
    assert.deepEqual((await claim(server, { queue_names: ['mq-scope-ok-1', 'mq-scope-ok-2'], limit: 5 }, key)).map((j) => j.id), [mine]);
    const untouched = await server.request('GET', '/api/v1/jobs?queue_name=mq-scope-no');
    assert.deepEqual(untouched.body.map((j: { status: string }) => j.status), ['pending']);
  });

  it('is described in the OpenAPI document', async () => {
    const res = await server.request('GET', '/docs/json', { auth: null });
    const schema = res.body.paths['/api/v1/jobs/claim'].post.requestBody.content['application/json'].schema;
    assert.match(schema.properties.queue_names.description, /^extension: .*exactly one of the two/);
    assert.equal(schema.properties.queue_names.maxItems, 32);
    assert.ok(!(schema.required ?? []).includes('queue_name'), 'queue_name is optional when queue_names is given');
    assert.ok(schema.required.includes('worker_id'));
  });

  it('long poll: a claim waiting on two queues is woken by a job on the second', async () => {
    const started = Date.now();
    const poll = claimRaw({ queue_names: ['mq-lp-1', 'mq-lp-2'], wait_ms: 20_000, limit: 5 });
    let settled = false;
    void poll.then(() => (settled = true));
    await sleep(300);
    assert.equal(settled, false, 'waits while both queues are empty');
    const id = await enqueue(server, { queue_name: 'mq-lp-2' });
    const res = await poll;
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.jobs.map((j: { id: string }) => j.id), [id]);
    assert.ok(Date.now() - started < 10_000, `answered after ${Date.now() - started} ms; wait_ms was 20000`);
  });

  it('long poll: waits for a rate-limited queue\'s tokens when it has jobs but none to spend', async () => {
    assert.equal((await server.request('PUT', '/api/v1/queues/mq-rated/config', { body: { rate_limit: 2, rate_limit_burst: 1 } })).status, 200);
    await enqueue(server, { queue_name: 'mq-rated' });
    const second = await enqueue(server, { queue_name: 'mq-rated' });
    assert.equal((await claim(server, { queue_names: ['mq-rated', 'mq-rated-other'], limit: 5 })).length, 1, 'the one token of the burst');
    const started = Date.now();
    const res = await claimRaw({ queue_names: ['mq-rated', 'mq-rated-other'], wait_ms: 10_000, limit: 5 });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.jobs.map((j: { id: string }) => j.id), [second]);
    const waited = Date.now() - started;
    assert.ok(waited >= 200 && waited < 5000, `answered after ${waited} ms: the refill (a token per 500 ms), not a notification or the end of wait_ms`);
  });
});

describe('ClaimWaiters with several queues', () => {
  it('a waiter of two queues is woken once, by either, and leaves both lines', () => {
    const waiters = new ClaimWaiters();
    const both = waiters.register(['a', 'b']);
    const onlyA = waiters.register('a');
    assert.equal(waiters.size(), 2);
    assert.equal(waiters.size('a'), 2);
    assert.equal(waiters.size('b'), 1);
    assert.equal(waiters.wakeOne('b'), true);
    assert.equal(both.woken, true);
    assert.equal(both.wokenBy, 'b');
    assert.equal(waiters.size('a'), 1, 'gone from the line of a too');
    assert.equal(waiters.wakeOne('a'), true);
    assert.equal(onlyA.woken, true, 'the next wakeup of a goes to the waiter still waiting');
    assert.equal(waiters.wakeOne('b'), false);
    assert.equal(waiters.size(), 0);
  });

  it('passes on a wakeup it did not use to the queue it came from, and a full batch to the queues that gave it', async () => {
    const waiters = new ClaimWaiters();
    const waitingOnA = waiters.register('a');
    const waitingOnB = waiters.register('b');
    const waitingOnC = waiters.register('c');
    // The claim has jobs already when a wakeup of b arrives: b's wakeup goes on.
    await claimWithWait(waiters, { key: ['a', 'b'], waitMs: 1000, limit: 5 }, async () => {
      waiters.wakeOne('b');
      return { jobs: ['from-a'] };
    });
    assert.equal(waitingOnB.woken, true);
    assert.equal(waitingOnA.woken, false, 'a batch short of its limit wakes nobody else');
    // A full batch from c: more may be due there.
    await claimWithWait(waiters, { key: ['a', 'c'], keyOf: (job: string) => job.split(':')[0]!, waitMs: 0, limit: 2 }, async () => ({ jobs: ['c:1', 'c:2'] }));
    assert.equal(waitingOnC.woken, true);
    assert.equal(waitingOnA.woken, false, 'a full batch of c wakes no waiter of a');
    waiters.close();
  });
});
