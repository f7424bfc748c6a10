import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { JOBS_CHANNEL, Notifier } from '@spool/engine';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { ClaimWaiters, claimWithWait } from '../src/claim-waiters.js';
import { enqueue } from './jobs-helpers.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('longpoll');
});
after(async () => server.close());

/** Starts a long-polling claim; `settled` tells whether it has answered yet. */
function longPoll(s: TestServer, body: Record<string, unknown>) {
  const started = Date.now();
  const state = { settled: false, elapsed: 0 };
  const promise = s.request('POST', '/api/v1/jobs/claim', { body: { worker_id: 'lp', ...body } }).then((res) => {
    state.settled = true;
    state.elapsed = Date.now() - started;
    return res;
  });
  return { promise, state };
}

describe('claim with wait_ms (long poll, extension)', () => {
  it('returns a job posted while it waits, long before wait_ms', async () => {
    // wait_ms is long so that "woken by the enqueue" and "timed out" stay far
    // apart even on a machine whose cores are saturated.
    const poll = longPoll(server, { queue_name: 'lp-1', wait_ms: 20_000 });
    await sleep(300);
    assert.equal(poll.state.settled, false, 'waits while the queue is empty');
    const posted = Date.now();
    const id = await enqueue(server, { queue_name: 'lp-1' });
    const res = await poll.promise;
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.jobs.map((j: any) => j.id), [id]);
    assert.ok(Date.now() - posted < 10_000, `answered ${Date.now() - posted} ms after the POST; wait_ms was 20000`);
  });

  it('answers { jobs: [] } once wait_ms passes with nothing due', async () => {
    const poll = longPoll(server, { queue_name: 'lp-empty', wait_ms: 600 });
    const res = await poll.promise;
    assert.deepEqual(res.body, { jobs: [] });
    assert.ok(poll.state.elapsed >= 550, `waited ${poll.state.elapsed} ms`);
  });

  it('wakes one waiting claim per new job; the others keep waiting', async () => {
    const polls = [1, 2, 3].map(() => longPoll(server, { queue_name: 'lp-one', wait_ms: 8000 }));
    await sleep(300);
    const first = await enqueue(server, { queue_name: 'lp-one' });
    await Promise.race(polls.map((p) => p.promise));
    await sleep(300);
    assert.equal(polls.filter((p) => p.state.settled).length, 1, 'exactly one poll answered');
    const rest = [await enqueue(server, { queue_name: 'lp-one' }), await enqueue(server, { queue_name: 'lp-one' })];
    const results = await Promise.all(polls.map((p) => p.promise));
    const got = results.flatMap((r) => r.body.jobs.map((j: any) => j.id)).sort();
    assert.deepEqual(got, [first, ...rest].sort(), 'each job went to exactly one poll');
    assert.ok(polls.every((p) => p.state.elapsed < 7000));
  });

  it('one NOTIFY for several jobs still reaches as many waiting claims (the wakeup is passed on)', async () => {
    const polls = [1, 2, 3].map(() => longPoll(server, { queue_name: 'lp-bulk', wait_ms: 8000, limit: 1 }));
    await sleep(300);
    const bulk = await server.request('POST', '/api/v1/jobs/bulk', { body: { queue_name: 'lp-bulk', jobs: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] } });
    assert.equal(bulk.body.success_count, 3);
    const results = await Promise.all(polls.map((p) => p.promise));
    assert.deepEqual(results.map((r) => r.body.jobs.length), [1, 1, 1]);
    assert.ok(polls.every((p) => p.state.elapsed < 7000), `elapsed ${polls.map((p) => p.state.elapsed)}`);
  });

  it('a paused queue answers nothing; resuming it wakes the waiting claim', async () => {
    await server.request('POST', '/api/v1/queues/lp-paused/pause', { rawBody: '' });
    const id = await enqueue(server, { queue_name: 'lp-paused' });
    const poll = longPoll(server, { queue_name: 'lp-paused', wait_ms: 8000 });
    await sleep(300);
    assert.equal(poll.state.settled, false);
    assert.equal((await server.request('POST', '/api/v1/queues/lp-paused/resume', { rawBody: '' })).status, 200);
    const res = await poll.promise;
    assert.deepEqual(res.body.jobs.map((j: any) => j.id), [id]);
    assert.ok(poll.state.elapsed < 7000);
  });

  it('does not hand jobs to a client that hung up', async () => {
    const controller = new AbortController();
    const aborted = fetch(`${server.url}/api/v1/jobs/claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.apiKey}` },
      body: JSON.stringify({ queue_name: 'lp-gone', worker_id: 'gone', wait_ms: 8000 }),
      signal: controller.signal,
    }).catch(() => null);
    await sleep(300);
    controller.abort();
    await aborted;
    await sleep(200);
    const id = await enqueue(server, { queue_name: 'lp-gone' });
    await sleep(300);
    const job = (await server.request('GET', `/api/v1/jobs/${id}`)).body;
    assert.equal(job.status, 'pending', 'the job stays available');
  });
});

describe('graceful shutdown', () => {
  it('releases a waiting long poll promptly when the server stops', async () => {
    const own = await startTestServer('longpollstop');
    const poll = longPoll(own, { queue_name: 'lp-stop', wait_ms: 30_000 });
    await sleep(300);
    const stopping = Date.now();
    // What must be prompt is the answer to the waiting poll; dropping the
    // test database afterwards can take long on a busy machine.
    const closed = own.close();
    const res = await poll.promise;
    const answeredAfter = Date.now() - stopping;
    await closed;
    assert.ok(answeredAfter < 5000, `the waiting poll was answered ${answeredAfter} ms after stop began`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { jobs: [] });
  });
});

describe('ClaimWaiters over a real notifier', () => {
  let database: TestDatabase;
  let notifier: Notifier;
  let waiters: ClaimWaiters;
  before(async () => {
    database = await createTestDatabase('waiters');
    notifier = new Notifier({ connectionString: database.url });
    waiters = new ClaimWaiters(notifier);
    await notifier.start();
  });
  after(async () => {
    waiters.close();
    await notifier.stop();
    await database.drop();
  });

  const notify = (payload: string) => database.pool.query('SELECT pg_notify($1, $2)', [JOBS_CHANNEL, payload]);

  it('a notification naming org:queue wakes exactly one waiter of that queue, the longest waiting', async () => {
    const key = ClaimWaiters.key('org', 'q');
    const list = [1, 2, 3].map(() => waiters.register(key));
    const outcomes = list.map((w) => w.wait(5000));
    const other = waiters.register(ClaimWaiters.key('org', 'other'));
    const otherOutcome = other.wait(5000);
    await notify(JSON.stringify({ q: [key], all: false, s: null }));
    assert.equal(await outcomes[0], 'woken');
    await sleep(100);
    assert.equal(waiters.size(key), 2);
    assert.equal(waiters.size(ClaimWaiters.key('org', 'other')), 1);
    await notify('');
    assert.deepEqual(await Promise.all(outcomes.slice(1)), ['woken', 'woken'], 'an empty payload (reconnect) wakes everyone');
    assert.equal(await otherOutcome, 'woken');
    assert.equal(waiters.size(), 0);
  });

  it('keeps a wakeup that arrives before wait() (no lost wakeups between claim and wait)', async () => {
    const key = ClaimWaiters.key('org', 'early');
    const waiter = waiters.register(key);
    await notify(JSON.stringify({ q: [key] }));
    await sleep(100);
    assert.equal(await waiter.wait(5000), 'woken');
  });

  it('claimWithWait passes a wakeup it cannot use to the next waiter', async () => {
    const key = ClaimWaiters.key('org', 'pass');
    const queue = ['job-a'];
    let firstClaims = 0;
    const second = claimWithWait(waiters, { key, waitMs: 3000, limit: 1 }, async () => ({ jobs: queue.length > 0 && firstClaims > 0 ? [queue.shift()!] : [] }));
    await sleep(50);
    // A claimer that fills its batch passes a wakeup on: the waiting one claims again and finds the job.
    firstClaims = 1;
    const first = await claimWithWait(waiters, { key, waitMs: 0, limit: 1 }, async () => ({ jobs: ['job-0'] }));
    assert.deepEqual(first, ['job-0']);
    assert.deepEqual(await second, ['job-a']);
  });

  it('close() releases waiters and refuses new waits', async () => {
    const local = new ClaimWaiters();
    const waiter = local.register('k');
    const outcome = waiter.wait(30_000);
    local.close();
    assert.equal(await outcome, 'closed');
    assert.equal(await local.register('k').wait(30_000), 'closed');
    assert.deepEqual(await claimWithWait(local, { key: 'k', waitMs: 30_000, limit: 1 }, async () => ({ jobs: [] })), []);
  });
});
