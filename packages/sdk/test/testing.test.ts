import assert from 'node:assert/strict';
import { AssertionError } from 'node:assert';
import { test } from 'node:test';
import { JobCancelledError, NonRetryableError, NotFoundError, Worker, type SpoolClient } from '../src/index.js';
import { FakeSpoolClient } from '../src/testing/index.js';

/** "Application code" under test: it only needs `client.jobs`. */
async function signUp(spool: Pick<SpoolClient, 'jobs'>, email: string): Promise<string> {
  const { id } = await spool.jobs.create({ queueName: 'emails', payload: { template: 'welcome', to: email, meta: { source: 'web' } }, idempotencyKey: `welcome:${email}` });
  return id;
}

test('assert a job was enqueued with a payload (partial match)', async () => {
  const spool = new FakeSpoolClient();
  const id = await signUp(spool, 'a@example.com');
  assert.equal(await signUp(spool, 'a@example.com'), id, 'idempotency key resolves to the first job');

  const [job] = spool.assertEnqueued({ queueName: 'emails', payload: { to: 'a@example.com', meta: { source: 'web' } } }, 1);
  assert.equal(job!.id, id);
  spool.assertNotEnqueued({ queueName: 'emails', payload: { to: 'b@example.com' } });

  assert.throws(
    () => spool.assertEnqueued({ queueName: 'sms' }),
    (err: unknown) => err instanceof AssertionError && /Expected a job matching/.test(err.message) && /emails \[pending\]/.test(err.message),
  );
  assert.throws(() => spool.assertNotEnqueued({ payload: { template: 'welcome' } }), AssertionError);

  // Code that wants a whole client gets one; what is not simulated says so.
  const client: SpoolClient = spool.asClient();
  await signUp(client, 'b@example.com');
  spool.assertEnqueued({ payload: { to: 'b@example.com' } });
  await assert.rejects(client.schedules.list(), /client\.schedules\.list\(\) is not simulated/);
  assert.throws(() => spool.assertEnqueued({ payload: { to: 'a@example.com', meta: { source: 'app' } } }), AssertionError);
  await assert.rejects(spool.jobs.get('missing'), NotFoundError);
});

test('run a queue inline: results complete, throws retry then dead-letter, follow-up jobs run too', async () => {
  const spool = new FakeSpoolClient();
  await spool.jobs.create({ queueName: 'work', payload: { step: 'ok' } });
  await spool.jobs.create({ queueName: 'work', payload: { step: 'flaky' }, maxRetries: 2 });
  await spool.jobs.create({ queueName: 'work', payload: { step: 'fatal' } });
  await spool.jobs.create({ queueName: 'work', payload: { step: 'chain' }, priority: 10 });
  await spool.jobs.create({ queueName: 'other', payload: {} });

  const attempts: Record<string, number[]> = {};
  const result = await spool.runJobs<{ step: string }>('work', async (job, ctx) => {
    (attempts[job.payload.step] ??= []).push(ctx.attempt);
    assert.equal(typeof ctx.leaseId, 'string');
    switch (job.payload.step) {
      case 'flaky':
        throw new Error('still flaky');
      case 'fatal':
        throw new NonRetryableError('bad');
      case 'chain':
        await spool.jobs.create({ queueName: 'work', payload: { step: 'ok' } });
        return 'chained';
      default:
        return { done: true };
    }
  });

  assert.deepEqual(attempts, { chain: [1], ok: [1, 1], flaky: [1, 2, 3], fatal: [1] });
  assert.equal(result.runs, 7);
  assert.equal(result.completed.length, 3);
  assert.equal(result.retried, 2);
  assert.deepEqual(result.deadlettered.map((job) => (job.payload as { step: string }).step).sort(), ['fatal', 'flaky']);
  assert.match(result.deadlettered.find((job) => (job.payload as { step: string }).step === 'flaky')!.lastError!, /Error: still flaky/);
  assert.equal(spool.enqueued({ queueName: 'other', status: 'pending' }).length, 1, 'other queues are left alone');
  assert.equal((await spool.dlq.list({ queueName: 'work' })).length, 2);
  assert.deepEqual(await spool.dlq.retry({ queueName: 'work' }).then((r) => r.retriedCount), 2);
});

test('a real Worker runs against the fake client', async () => {
  const spool = new FakeSpoolClient();
  for (let i = 0; i < 5; i++) await spool.jobs.create({ queueName: 'resize', payload: { i } });
  const worker = new Worker<{ i: number }>(spool, { queue: 'resize', concurrency: 2, waitMs: 0, pollIntervalMs: 10 });
  const seen: number[] = [];
  worker.handle((job) => {
    seen.push(job.payload.i);
    return job.payload.i * 2;
  });
  await worker.start();
  for (let i = 0; i < 200 && spool.enqueued({ status: 'completed' }).length < 5; i++) await new Promise((r) => setTimeout(r, 10));
  await worker.stop();
  assert.deepEqual(seen.sort(), [0, 1, 2, 3, 4]);
  assert.deepEqual(spool.enqueued({ queueName: 'resize' }).map((job) => job.result).sort(), [0, 2, 4, 6, 8]);
  const [registered] = await spool.workers.list();
  assert.equal(registered!.status, 'offline');
});

test('a Worker of several queues runs against the fake client, each job by its queue\'s handler', async () => {
  const spool = new FakeSpoolClient();
  await spool.jobs.create({ queueName: 'thumbs', payload: { i: 1 } });
  await spool.jobs.create({ queueName: 'videos', payload: { i: 2 }, priority: 3 });
  const seen: string[] = [];
  const worker = new Worker<{ i: number }>(spool, {
    queues: { thumbs: (job) => void seen.push(`thumb ${job.payload.i}`), videos: (job) => void seen.push(`video ${job.payload.i}`) },
    concurrency: 1, waitMs: 0, pollIntervalMs: 10,
  });
  await worker.start();
  for (let i = 0; i < 200 && spool.enqueued({ status: 'completed' }).length < 2; i++) await new Promise((r) => setTimeout(r, 10));
  await worker.stop();
  assert.deepEqual(seen, ['video 2', 'thumb 1'], 'claim order across the queues: priority first');
});

test('a Worker given asClient() learns of cancellation from heartbeats, without stream errors', async () => {
  const spool = new FakeSpoolClient();
  const { id } = await spool.jobs.create({ queueName: 'long', payload: {} });
  const worker = new Worker(spool.asClient(), { queue: 'long', leaseSeconds: 5, heartbeatFraction: 0.05, waitMs: 0, pollIntervalMs: 10 });
  const errors: unknown[] = [];
  worker.on('error', (err) => errors.push(err));
  let reason: unknown;
  worker.handle((_job, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject((reason = ctx.signal.reason)))));
  await worker.start();
  for (let i = 0; i < 200 && worker.runningCount === 0; i++) await new Promise((r) => setTimeout(r, 10));
  spool.requestCancel(id);
  for (let i = 0; i < 200 && reason === undefined; i++) await new Promise((r) => setTimeout(r, 10));
  await worker.stop();
  assert.ok(reason instanceof JobCancelledError, String(reason));
  assert.deepEqual(errors, [], 'the missing event stream is not an error');
  await assert.rejects(spool.asClient().events.stream().next(), /client\.events\.stream\(\) is not simulated/);
});
