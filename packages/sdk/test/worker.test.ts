import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FakeSpoolServer } from '../../../test-support/fake-spool-server.js';
import {
  AuthenticationError,
  JobCancelledError,
  JobTimeoutError,
  LeaseLostError,
  NonRetryableError,
  SpoolClient,
  Worker,
  WorkerShutdownError,
  type WorkerOptions,
} from '../src/index.js';

let server: FakeSpoolServer;
let client: SpoolClient;
const workers: Worker<any>[] = [];

before(async () => {
  server = await new FakeSpoolServer().start();
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey, retry: { baseDelayMs: 5, maxDelayMs: 20 } });
});

after(async () => {
  for (const worker of workers) await worker.stop({ graceMs: 0 });
  await server.stop();
});

async function waitFor(what: string, predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function makeWorker<P = unknown>(queue: string, options: Partial<WorkerOptions> = {}): Worker<P> {
  const worker = new Worker<P>(client, { queue, waitMs: 2000, pollIntervalMs: 50, ...options });
  worker.on('error', () => {});
  workers.push(worker);
  return worker;
}

/** Makes every job of `worker` wait in its handler until the returned function is called. */
function holdJobs(worker: Worker<any>): () => void {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  worker.handle(async () => {
    await gate;
    return null;
  });
  return release;
}

test('registers, claims with the long poll, heartbeats, passes the lease id and completes', async () => {
  const job = server.addJob('flow', { n: 1 });
  const worker = makeWorker('flow', { concurrency: 3, leaseSeconds: 5, heartbeatFraction: 0.05, hostname: 'test host!' });
  let seenLease: string | null = null;
  const completed: unknown[] = [];
  worker.on('completed', (_job, result) => completed.push(result));
  worker.handle(async (claimed, ctx) => {
    seenLease = ctx.leaseId;
    assert.equal(ctx.attempt, 1);
    assert.deepEqual(claimed.payload, { n: 1 });
    await new Promise((resolve) => setTimeout(resolve, 700));
    return { doubled: 2, snake_key: true };
  });
  await worker.start();
  await waitFor('completion', () => completed.length === 1);

  const [register] = server.calls('/api/v1/workers/register');
  assert.deepEqual(register!.body, { queue_name: 'flow', hostname: 'test-host-', worker_type: 'nodejs', max_concurrency: 3, metadata: {}, version: '0.1.0' });
  const claim = server.calls('/api/v1/jobs/claim').find((c) => (c.body as { queue_name: string }).queue_name === 'flow');
  assert.deepEqual(claim!.body, { queue_name: 'flow', worker_id: worker.workerId, limit: 3, lease_duration_secs: 5, wait_ms: 2000 });
  const beats = server.calls(`/api/v1/jobs/${job.id}/heartbeat`);
  assert.ok(beats.length >= 2, `expected heartbeats, got ${beats.length}`);
  assert.deepEqual(beats[0]!.body, { worker_id: worker.workerId, lease_duration_secs: 5, lease_id: seenLease });
  const [complete] = server.calls('/api/v1/jobs/complete');
  assert.deepEqual(complete!.body, { worker_id: worker.workerId, items: [{ job_id: job.id, lease_id: seenLease, result: { doubled: 2, snake_key: true } }] });
  assert.equal(server.job(job.id)!.status, 'completed');
  assert.deepEqual(completed[0], { doubled: 2, snake_key: true });
  await worker.stop();
  assert.equal(server.calls(`/api/v1/workers/${worker.workerId}/deregister`).length, 1);
});

test('a thrown error fails the job with message and stack; NonRetryableError dead-letters it', async () => {
  const retried = server.addJob('fails', { kind: 'retry' });
  const fatal = server.addJob('fails', { kind: 'fatal' });
  const worker = makeWorker<{ kind: string }>('fails');
  const failures: { id: string; willRetry: boolean; retryable: boolean }[] = [];
  worker.on('failed', (job, _err, info) => failures.push({ id: job.id, ...info }));
  worker.handle(async (job) => {
    if (job.payload.kind === 'fatal') throw new NonRetryableError('bad input');
    throw new Error('boom');
  });
  await worker.start();
  await waitFor('two failures', () => failures.length === 2);
  await worker.stop();

  assert.equal(server.job(retried.id)!.status, 'pending');
  assert.equal(server.job(retried.id)!.retry_count, 1);
  assert.equal(server.job(fatal.id)!.status, 'deadletter');
  const items = server.calls('/api/v1/jobs/fail').flatMap((c) => (c.body as { items: Record<string, unknown>[] }).items);
  const retryItem = items.find((item) => item.job_id === retried.id)!;
  assert.match(retryItem.error as string, /^Error: boom\n\s+at /);
  assert.equal(retryItem.retryable, true);
  const fatalItem = items.find((item) => item.job_id === fatal.id)!;
  assert.match(fatalItem.error as string, /^NonRetryableError: bad input/);
  assert.equal(fatalItem.retryable, false);
  assert.deepEqual(failures.find((f) => f.id === retried.id), { id: retried.id, willRetry: true, retryable: true });
  assert.deepEqual(failures.find((f) => f.id === fatal.id), { id: fatal.id, willRetry: false, retryable: false });
});

test('outcomes settling together share one batch request', async () => {
  const ids = Array.from({ length: 20 }, (_, i) => server.addJob('batch', { i }).id);
  const worker = makeWorker('batch', { concurrency: 20 });
  let done = 0;
  worker.on('completed', () => (done += 1));
  const release = holdJobs(worker);
  await worker.start();
  await waitFor('all running', () => worker.runningCount === 20);
  release();
  await waitFor('all completed', () => done === 20);
  await worker.stop();
  const batches = server.calls('/api/v1/jobs/complete').filter((c) => (c.body as { worker_id: string }).worker_id === worker.workerId);
  const reported = batches.flatMap((c) => (c.body as { items: { job_id: string }[] }).items.map((item) => item.job_id));
  assert.deepEqual(reported.sort(), ids.sort());
  assert.ok(batches.length < 20, `expected batching, got ${batches.length} requests`);
  assert.equal(server.calls(/^\/api\/v1\/jobs\/[^/]+\/complete$/).filter((c) => ids.some((id) => c.path.includes(id))).length, 0);
});

test('with room for several batches, claims run in parallel and never take more than the room', async () => {
  for (let i = 0; i < 400; i++) server.addJob('parallel', { i });
  const worker = makeWorker('parallel', { concurrency: 250, maxBatch: 100 });
  let most = 0;
  let done = 0;
  worker.on('started', () => (most = Math.max(most, worker.runningCount)));
  worker.on('completed', () => (done += 1));
  const release = holdJobs(worker);
  await worker.start();
  await waitFor('the room filled', () => worker.runningCount === 250);
  const claims = server.calls('/api/v1/jobs/claim').filter((c) => (c.body as { worker_id: string }).worker_id === worker.workerId);
  assert.ok(claims.length >= 3, `three claimers, ${claims.length} claims`);
  assert.ok(claims.every((c) => (c.body as { limit: number }).limit <= 100));
  release();
  await waitFor('all completed', () => done === 400);
  assert.ok(most <= 250, `at most 250 running at once, saw ${most}`);
  await worker.stop();
});

test('outcomes the server has not taken yet hold their slots: claims wait instead of running ahead', async () => {
  for (let i = 0; i < 100; i++) server.addJob('held', { i });
  // Reports fail for a while (retried): the jobs stay claimed on the server.
  server.inject('POST', '/api/v1/jobs/complete', ...Array.from({ length: 6 }, () => ({ status: 503, body: { error: 'unavailable' } })));
  const worker = makeWorker('held', { concurrency: 10, maxBatch: 5 });
  let started = 0;
  let done = 0;
  worker.on('started', () => (started += 1));
  worker.on('completed', () => (done += 1));
  worker.handle(async () => null);
  await worker.start();
  await waitFor('the first reports to fail', () => server.calls('/api/v1/jobs/complete').length >= 2);
  await new Promise((resolve) => setTimeout(resolve, 300));
  // 10 running at most, plus one batch of 5 per report in flight (2 claimers, so 2 reports).
  assert.ok(started <= 20, `claims ran ahead of failing reports: ${started} jobs taken`);
  await waitFor('all completed', () => done === 100, 20_000);
  await worker.stop();
});

test('servers without batch endpoints get one request per job', async () => {
  server.batch = false;
  try {
    const ids = Array.from({ length: 3 }, (_, i) => server.addJob('nobatch', { i }).id);
    const failing = server.addJob('nobatch', { fail: true }).id;
    const worker = makeWorker<{ fail?: boolean }>('nobatch', { concurrency: 4 });
    let settled = 0;
    worker.on('completed', () => (settled += 1));
    worker.on('failed', () => (settled += 1));
    worker.handle(async (job) => {
      if (job.payload.fail) throw new Error('nope');
      return 'ok';
    });
    await worker.start();
    await waitFor('all reported', () => settled === 4);
    await worker.stop();
    for (const id of ids) {
      assert.equal(server.job(id)!.status, 'completed');
      assert.equal(server.calls(`/api/v1/jobs/${id}/complete`).length, 1);
    }
    assert.equal(server.job(failing)!.status, 'pending');
    assert.equal(server.calls(`/api/v1/jobs/${failing}/fail`).length, 1);
  } finally {
    server.batch = true;
  }
});

test('cancel_requested in a heartbeat answer aborts the handler and fails the job without retry', async () => {
  const job = server.addJob('cancel', {});
  const worker = makeWorker('cancel', { leaseSeconds: 5, heartbeatFraction: 0.05 });
  let reason: unknown;
  worker.handle(async (_job, ctx) => {
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    reason = ctx.signal.reason;
    throw ctx.signal.reason;
  });
  await worker.start();
  await waitFor('running', () => worker.runningCount === 1);
  assert.equal(await client.jobs.cancel(job.id), 'cancel_requested');
  await waitFor('cancelled', () => server.job(job.id)!.status === 'cancelled');
  assert.ok(reason instanceof JobCancelledError);
  const item = server.calls('/api/v1/jobs/fail').flatMap((c) => (c.body as { items: Record<string, unknown>[] }).items).find((i) => i.job_id === job.id);
  assert.equal(item!.retryable, false);
  await worker.stop();
});

test('a job over its timeout sees its signal fire and is failed', async () => {
  const job = server.addJob('timeout', {}, { timeout_seconds: 1 });
  const worker = makeWorker('timeout');
  let reason: unknown;
  worker.handle((_job, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject((reason = ctx.signal.reason)))));
  await worker.start();
  await waitFor('failed', () => server.job(job.id)!.last_error !== null, 4000);
  assert.ok(reason instanceof JobTimeoutError);
  assert.match(server.job(job.id)!.last_error as string, /JobTimeoutError: Job exceeded its timeout of 1 s/);
  assert.equal(server.job(job.id)!.status, 'pending');
  await worker.stop();
});

test('a heartbeat refused as timed out by the server aborts the handler with a JobTimeoutError and reports nothing', async () => {
  // A long timeout: the worker's own timer does not fire; the server's answer decides.
  const job = server.addJob('server-timeout', {}, { timeout_seconds: 600 });
  const worker = makeWorker('server-timeout', { leaseSeconds: 5, heartbeatFraction: 0.05 });
  const errors: unknown[] = [];
  worker.on('error', (err) => errors.push(err));
  let reason: unknown;
  worker.handle(async (_job, ctx) => {
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    reason = ctx.signal.reason;
    return 'too late';
  });
  await worker.start();
  await waitFor('running', () => worker.runningCount === 1);
  await waitFor('a heartbeat', () => server.calls(`/api/v1/jobs/${job.id}/heartbeat`).length > 0);
  server.timedOut.add(job.id);
  await waitFor('aborted', () => reason !== undefined);
  assert.ok(reason instanceof JobTimeoutError, String(reason));
  assert.equal(reason.enforcedByServer, true);
  assert.equal(reason.timeoutSeconds, 600);
  assert.ok(errors.some((err) => err === reason), 'the worker reports it on its error event');
  await worker.stop();
  const reported = [...server.calls('/api/v1/jobs/complete'), ...server.calls('/api/v1/jobs/fail')];
  assert.equal(reported.some((c) => JSON.stringify(c.body).includes(job.id)), false, 'the server fails the job itself');
});

test('a job whose timeout the server enforces is aborted at its timeout and left to the server to fail', async () => {
  const job = server.addJob('enforced-timeout', {}, { timeout_seconds: 1, timeout_enforced: true });
  const worker = makeWorker('enforced-timeout');
  let reason: unknown;
  worker.handle((_job, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject((reason = ctx.signal.reason)))));
  await worker.start();
  await waitFor('aborted', () => reason !== undefined, 4000);
  assert.ok(reason instanceof JobTimeoutError);
  assert.equal(reason.enforcedByServer, true);
  await worker.stop();
  const reported = [...server.calls('/api/v1/jobs/complete'), ...server.calls('/api/v1/jobs/fail')];
  assert.equal(reported.some((c) => JSON.stringify(c.body).includes(job.id)), false, 'no fail report the server would refuse');
});

test('a lost lease aborts the handler and reports nothing', async () => {
  const job = server.addJob('lost', {});
  const worker = makeWorker('lost', { leaseSeconds: 5, heartbeatFraction: 0.05 });
  const errors: unknown[] = [];
  worker.on('error', (err) => errors.push(err));
  let reason: unknown;
  worker.handle(async (_job, ctx) => {
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    reason = ctx.signal.reason;
    return 'too late';
  });
  await worker.start();
  await waitFor('running', () => worker.runningCount === 1);
  server.job(job.id)!.lease_id = 'someone-else';
  await waitFor('aborted', () => reason !== undefined);
  assert.ok(reason instanceof LeaseLostError);
  assert.ok(errors.some((err) => err instanceof LeaseLostError));
  await worker.stop();
  assert.equal(server.calls('/api/v1/jobs/complete').some((c) => JSON.stringify(c.body).includes(job.id)), false);
});

test('stop phase 1: stops claiming at once, lets running jobs finish, then deregisters', async () => {
  const job = server.addJob('graceful', {});
  const worker = makeWorker('graceful', { waitMs: 30_000 });
  worker.handle(async () => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    return 'finished';
  });
  await worker.start();
  await waitFor('running', () => worker.runningCount === 1);
  const result = await worker.stop({ graceMs: 5000 });
  assert.deepEqual(result.released, []);
  assert.equal(server.job(job.id)!.status, 'completed');
  const log = server.requests.map((r) => r.path);
  const completeAt = log.findIndex((p, i) => p === '/api/v1/jobs/complete' && JSON.stringify(server.requests[i]!.body).includes(job.id));
  const deregisterAt = log.indexOf(`/api/v1/workers/${worker.workerId}/deregister`);
  assert.ok(completeAt >= 0 && deregisterAt > completeAt, 'completion is flushed before deregistering');
  assert.equal(worker.state, 'stopped');

  // Stopping an idle worker does not wait for its 30 s long poll.
  const idle = makeWorker('graceful-idle', { waitMs: 30_000 });
  idle.handle(() => null);
  await idle.start();
  await waitFor('polling', () => server.calls('/api/v1/jobs/claim').some((c) => (c.body as { worker_id: string }).worker_id === idle.workerId));
  const began = Date.now();
  await idle.stop();
  assert.ok(Date.now() - began < 5000);
});

test('stop phase 2: aborts what is left after the grace period and hands it back', async () => {
  const job = server.addJob('forced', {});
  const worker = makeWorker('forced');
  let reason: unknown;
  worker.handle(async (_job, ctx) => {
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    reason = ctx.signal.reason;
    throw ctx.signal.reason;
  });
  await worker.start();
  await waitFor('running', () => worker.runningCount === 1);
  const result = await worker.stop({ graceMs: 200 });
  assert.deepEqual(result.released, [job.id]);
  assert.ok(reason instanceof WorkerShutdownError);
  assert.equal(server.job(job.id)!.status, 'pending', 'deregistration returned the job to pending');
  assert.equal(server.job(job.id)!.retry_count, 0, 'a handed-back job keeps its retries');
  const reported = server.requests.filter((r) => /\/(complete|fail)$/.test(r.path) && JSON.stringify(r.body).includes(job.id));
  assert.deepEqual(reported, []);
});

test('a second stop with graceMs 0 cuts the grace period short', async () => {
  server.addJob('force-again', {});
  const worker = makeWorker('force-again');
  worker.handle((_job, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))));
  await worker.start();
  await waitFor('running', () => worker.runningCount === 1);
  const first = worker.stop({ graceMs: 60_000 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const second = worker.stop({ graceMs: 0 });
  assert.equal(first, second);
  assert.equal((await second).released.length, 1);
});

test('start rejects when registration is refused', async () => {
  const bad = new Worker(new SpoolClient({ baseUrl: server.url, apiKey: 'sk_test_wrong', retry: false }), { queue: 'x' });
  bad.handle(() => null);
  await assert.rejects(bad.start(), AuthenticationError);
  assert.equal(bad.state, 'stopped');
  await assert.rejects(new Worker(client, { queue: 'x' }).start(), /call worker.handle/);
});

test('stop during start waits for the registration and deregisters', async () => {
  const worker = makeWorker('stop-early');
  worker.handle(() => null);
  const started = worker.start();
  const stopped = worker.stop();
  await started;
  assert.deepEqual(await stopped, { released: [] });
  assert.equal(worker.state, 'stopped');
  assert.equal(server.calls(`/api/v1/workers/${worker.workerId}/deregister`).length, 1);
  await assert.rejects(worker.start(), /the worker is stopped/);
});

test('an outcome outlives a server outage shorter than the lease: reported, not dropped', async () => {
  const job = server.addJob('outage', { n: 1 });
  // Six 503s (a server or its database restarting) span about 4.4 s of backoff: longer than the four attempts alone, shorter than the 5 s lease.
  server.inject('POST', '/api/v1/jobs/complete', ...Array.from({ length: 6 }, () => ({ status: 503, body: { code: 'INTERNAL_ERROR', message: 'Database temporarily unavailable; retry shortly' } })));
  const worker = makeWorker('outage', { leaseSeconds: 5 });
  const errors: unknown[] = [];
  worker.on('error', (err) => errors.push(err));
  let completed = 0;
  worker.on('completed', () => (completed += 1));
  worker.handle(async () => 'done');
  await worker.start();
  await waitFor('completion', () => completed === 1, 8000);
  assert.equal(server.job(job.id)!.status, 'completed');
  assert.equal(server.calls('/api/v1/jobs/complete').filter((c) => JSON.stringify(c.body).includes(job.id)).length, 7);
  assert.deepEqual(errors, []);
  await worker.stop();
});

test('a worker of several queues registers them all, claims with queue_names and hands each job to its queue\'s handler', async () => {
  server.addJob('two-a', { n: 1 });
  server.addJob('two-b', { n: 2 }, { priority: 5 });
  server.addJob('two-a', { n: 3 });
  const ran: string[] = [];
  const worker = new Worker<{ n: number }>(client, {
    queues: {
      'two-a': (job) => void ran.push(`a:${job.payload.n}`),
      'two-b': (job) => void ran.push(`b:${job.payload.n}`),
    },
    concurrency: 1,
    waitMs: 2000,
    pollIntervalMs: 50,
    cancelStream: false,
  });
  worker.on('error', () => {});
  workers.push(worker);
  await worker.start();
  await waitFor('three jobs', () => ran.length === 3);
  assert.deepEqual(ran, ['b:2', 'a:1', 'a:3'], 'one job at a time, in claim order across the queues, each by its own handler');
  const register = server.calls('/api/v1/workers/register').find((c) => (c.body as { queue_name: string }).queue_name === 'two-a');
  assert.deepEqual((register!.body as { queue_names: string[] }).queue_names, ['two-b']);
  const claim = server.calls('/api/v1/jobs/claim').find((c) => (c.body as { worker_id: string }).worker_id === worker.workerId);
  assert.deepEqual(claim!.body, { queue_names: ['two-a', 'two-b'], worker_id: worker.workerId, limit: 1, lease_duration_secs: 30, wait_ms: 2000 });
  await worker.stop();
});
