/**
 * The SDK against the real server (startSpool over a test database): the
 * client's wire format, and the worker's claim → heartbeat → complete/fail
 * flow, cancellation, leases and shutdown over real HTTP.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { JobCancelledError, NonRetryableError, NotFoundError, SpoolClient, ValidationError, Worker, type WorkerOptions } from '../src/index.js';

let server: TestServer;
let client: SpoolClient;

before(async () => {
  server = await startTestServer('sdk_e2e');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
});

after(() => server.close());

async function waitFor(what: string, predicate: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function worker<P = unknown>(queue: string, options: Partial<WorkerOptions> = {}, on: SpoolClient = client): Worker<P> {
  const w = new Worker<P>(on, { queue, waitMs: 1000, ...options });
  w.on('error', () => {});
  return w;
}

test('life cycle through the SDK: enqueue, process, retry, dead-letter, replay', async () => {
  const first = await client.jobs.create({ queueName: 'life', payload: { kind: 'ok', someKey: { nested_key: 1 } }, idempotencyKey: 'life-1', tags: { tagKey: 1 } });
  const again = await client.jobs.create({ queueName: 'life', payload: { kind: 'ignored' }, idempotencyKey: 'life-1' });
  assert.deepEqual(again, { id: first.id, created: false });
  const flaky = await client.jobs.create({ queueName: 'life', payload: { kind: 'flaky' } });
  const fatal = await client.jobs.create({ queueName: 'life', payload: { kind: 'fatal' } });

  const job = await client.jobs.get(first.id);
  assert.equal(job.queueName, 'life');
  assert.deepEqual(job.payload, { kind: 'ok', someKey: { nested_key: 1 } });
  assert.deepEqual(job.tags, { tagKey: 1 });
  await assert.rejects(client.jobs.get('not-a-job'), NotFoundError);
  await assert.rejects(client.jobs.create({ queueName: '', payload: {} }), ValidationError);

  const w = worker<{ kind: string }>('life', { concurrency: 4 });
  const leases: (string | null)[] = [];
  w.handle((claimed, ctx) => {
    leases.push(ctx.leaseId);
    if (claimed.payload.kind === 'flaky') throw new Error('flaky failure');
    if (claimed.payload.kind === 'fatal') throw new NonRetryableError('cannot ever work');
    return { echoed: claimed.payload, camelKey: true };
  });
  await w.start();
  await waitFor('all three settled', async () => {
    const byId = new Map((await client.jobs.statuses([first.id, flaky.id, fatal.id])).map((s) => [s.id, s]));
    return byId.get(first.id)?.status === 'completed' && byId.get(fatal.id)?.status === 'deadletter' && byId.get(flaky.id)?.retryCount === 1;
  });
  await w.stop();

  const done = await client.jobs.get(first.id);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.result, { echoed: { kind: 'ok', someKey: { nested_key: 1 } }, camelKey: true });
  assert.ok(leases.every((lease) => typeof lease === 'string' && lease.length > 0));
  const retried = await client.jobs.get(flaky.id);
  assert.equal(retried.status, 'pending', 'retried later with backoff');
  assert.equal(retried.retryCount, 1);
  assert.match(retried.lastError!, /^Error: flaky failure\n\s+at /);
  assert.equal((await client.jobs.get(fatal.id)).status, 'deadletter');

  const dlq = await client.dlq.list({ queueName: 'life' });
  assert.deepEqual(dlq.map((row) => row.id), [fatal.id]);
  const replay = await client.dlq.retry({ jobIds: [fatal.id] });
  assert.deepEqual(replay.retriedJobs, [fatal.id]);
  assert.equal((await client.jobs.get(fatal.id)).status, 'pending');

  const info = await client.workers.get(w.workerId!);
  assert.equal(info.status, 'offline');
});

test('bulk enqueue of 10,000 jobs, worker concurrency 32: every job completed exactly once', async () => {
  const org = await server.createOrganization();
  const own = new SpoolClient({ baseUrl: server.url, apiKey: org.apiKey });
  const total = 10_000;
  const chunks = Array.from({ length: total / 100 }, (_, c) => Array.from({ length: 100 }, (_, i) => ({ payload: { n: c * 100 + i } })));
  for (let i = 0; i < chunks.length; i += 4) {
    const answers = await Promise.all(chunks.slice(i, i + 4).map((jobs) => own.jobs.bulk({ queueName: 'bulk', jobs })));
    for (const answer of answers) assert.equal(answer.successCount, 100);
  }
  const runs = new Map<number, number>();
  let completed = 0;
  const w = worker<{ n: number }>('bulk', { concurrency: 32 }, own);
  w.on('completed', () => (completed += 1));
  w.handle((job) => {
    runs.set(job.payload.n, (runs.get(job.payload.n) ?? 0) + 1);
    return null;
  });
  await w.start();
  await waitFor('10,000 completions', () => completed === total, 120_000);
  await w.stop();
  assert.equal(runs.size, total);
  assert.ok([...runs.values()].every((count) => count === 1), 'no job ran twice');
  const stats = await own.jobs.stats();
  assert.equal(stats.completed, total);
  assert.equal(stats.total, total);
});

test('cancelling a running job reaches the handler signal within a second (heartbeat answer)', async () => {
  const { id } = await client.jobs.create({ queueName: 'cancel', payload: {} });
  const w = worker('cancel', { leaseSeconds: 5, heartbeatFraction: 0.05, cancelStream: false });
  let abortedAt = 0;
  let reason: unknown;
  w.handle((_job, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => {
    abortedAt = Date.now();
    reason = ctx.signal.reason;
    reject(ctx.signal.reason);
  })));
  await w.start();
  await waitFor('running', () => w.runningCount === 1);
  const askedAt = Date.now();
  assert.equal(await client.jobs.cancel(id), 'cancel_requested');
  await waitFor('aborted', () => abortedAt > 0, 5000);
  assert.ok(abortedAt - askedAt <= 1000, `signal fired after ${abortedAt - askedAt} ms`);
  assert.ok(reason instanceof JobCancelledError);
  await waitFor('cancelled', async () => (await client.jobs.get(id)).status === 'cancelled');
  await w.stop();
});

/** Starts a job that waits for its signal; resolves how long after the cancel request the signal fired (or null). */
async function cancelLatency(queue: string, options: Partial<WorkerOptions>, waitMs: number): Promise<{ ms: number | null; reason: unknown; id: string; w: Worker }> {
  const { id } = await client.jobs.create({ queueName: queue, payload: {} });
  const w = worker(queue, options);
  let abortedAt = 0;
  let reason: unknown;
  w.handle((_job, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => {
    abortedAt = Date.now();
    reason = ctx.signal.reason;
    reject(ctx.signal.reason);
  })));
  await w.start();
  await waitFor('running', () => w.runningCount === 1);
  await new Promise((resolve) => setTimeout(resolve, 200)); // the stream is connected by now
  const askedAt = Date.now();
  assert.equal(await client.jobs.cancel(id), 'cancel_requested');
  await waitFor('aborted', () => abortedAt > 0, waitMs).catch(() => {});
  return { ms: abortedAt ? abortedAt - askedAt : null, reason, id, w };
}

test('cancelling a running job reaches the handler within a second through the realtime stream, with 10 s heartbeats', async () => {
  const streamed = await cancelLatency('cancel-stream', { leaseSeconds: 30 }, 3000);
  try {
    assert.ok(streamed.ms !== null && streamed.ms < 1000, `signal fired after ${streamed.ms} ms`);
    assert.ok(streamed.reason instanceof JobCancelledError);
    await waitFor('cancelled', async () => (await client.jobs.get(streamed.id)).status === 'cancelled');
  } finally {
    // A worker left running would keep the test process alive.
    await streamed.w.stop({ graceMs: 0 });
  }

  // The same without the stream waits for the next heartbeat (10 s away): the stream is what was fast.
  const polled = await cancelLatency('cancel-nostream', { leaseSeconds: 30, cancelStream: false }, 1500);
  assert.equal(polled.ms, null, 'without the stream the signal waits for the heartbeat');
  await polled.w.stop({ graceMs: 0 });
  await client.jobs.cancel(polled.id).catch(() => {});
});

test('a job longer than its lease stays owned because of heartbeats', async () => {
  const { id } = await client.jobs.create({ queueName: 'long', payload: {} });
  const w = worker('long', { leaseSeconds: 5 });
  w.handle(async () => {
    await new Promise((resolve) => setTimeout(resolve, 7000));
    return 'survived';
  });
  await w.start();
  await waitFor('completed', async () => (await client.jobs.get(id)).status === 'completed', 20_000);
  await w.stop();
  const job = await client.jobs.get(id);
  assert.equal(job.retryCount, 0, 'the lease never expired');
  assert.equal(job.result, 'survived');
});

test('graceful stop with jobs in flight: nothing lost, nothing completed twice', async () => {
  const ids = (await client.jobs.bulk({ queueName: 'graceful', jobs: Array.from({ length: 40 }, (_, n) => ({ payload: { n } })) })).succeeded.map((s) => s.jobId);
  const runs = new Map<string, number>();
  const handler = async (job: { id: string }) => {
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    await new Promise((resolve) => setTimeout(resolve, 150));
    return null;
  };
  const first = worker('graceful', { concurrency: 8 }).handle(handler);
  await first.start();
  await waitFor('some done', async () => (await client.jobs.statuses(ids)).filter((s) => s.status === 'completed').length >= 8);
  const { released } = await first.stop({ graceMs: 10_000 });
  assert.deepEqual(released, []);
  const second = worker('graceful', { concurrency: 8 }).handle(handler);
  await second.start();
  await waitFor('all done', async () => (await client.jobs.statuses(ids)).every((s) => s.status === 'completed'));
  await second.stop();
  assert.equal(runs.size, 40);
  assert.ok([...runs.values()].every((count) => count === 1), 'each job ran once');
  const history = await server.database.pool.query<{ n: string }>(
    "SELECT count(*) AS n FROM spool.job_events WHERE job_id = ANY($1::uuid[]) AND to_status = 'completed'",
    [ids],
  );
  assert.equal(Number(history.rows[0]!.n), 40);
});

test('forced stop hands running jobs back without using a retry', async () => {
  const { id } = await client.jobs.create({ queueName: 'forced', payload: {} });
  const w = worker('forced').handle((_job, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))));
  await w.start();
  await waitFor('running', () => w.runningCount === 1);
  assert.deepEqual((await w.stop({ graceMs: 100 })).released, [id]);
  const job = await client.jobs.get(id);
  assert.equal(job.status, 'pending');
  assert.equal(job.retryCount, 0);
  const next = worker('forced').handle(() => 'done elsewhere');
  await next.start();
  await waitFor('completed elsewhere', async () => (await client.jobs.get(id)).status === 'completed');
  await next.stop();
});

test('SIGKILL of a worker process mid-job: another worker finishes it after the lease expires', async () => {
  const { id } = await client.jobs.create({ queueName: 'killed', payload: {} });
  const script = fileURLToPath(new URL('./fixtures/hanging-worker.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, SPOOL_URL: server.url, SPOOL_API_KEY: server.apiKey, QUEUE: 'killed' } });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await waitFor('the child started the job', () => output.includes(`started ${id}`), 30_000);
  child.kill('SIGKILL');
  await exited;

  const survivor = worker('killed', { leaseSeconds: 5 }).handle(() => 'rescued');
  await survivor.start();
  await waitFor('finished by the survivor', async () => (await client.jobs.get(id)).status === 'completed', 20_000);
  await survivor.stop();
  const job = await client.jobs.get(id);
  assert.equal(job.result, 'rescued');
  assert.equal(job.retryCount, 1, 'the expired lease counted as an attempt');
});

test('a worker of two queues: one claim across both (queue_names), each job to its queue\'s handler, concurrency shared, cancellation by stream', async () => {
  for (let n = 0; n < 6; n++) {
    await client.jobs.create({ queueName: 'multi-emails', payload: { n } });
    await client.jobs.create({ queueName: 'multi-reports', payload: { n }, priority: n % 2 === 0 ? 5 : 0 });
  }
  let running = 0;
  let most = 0;
  const seen: Record<string, string[]> = { emails: [], reports: [] };
  const handler = (name: 'emails' | 'reports') => async (job: { queueName: string }) => {
    running += 1;
    most = Math.max(most, running);
    seen[name]!.push(job.queueName);
    await new Promise((resolve) => setTimeout(resolve, 30));
    running -= 1;
    return name;
  };
  const w = new Worker<{ n: number }>(client, {
    queues: { 'multi-emails': handler('emails'), 'multi-reports': handler('reports') },
    concurrency: 3,
    waitMs: 1000,
    leaseSeconds: 30,
  });
  w.on('error', () => {});
  const completed: unknown[] = [];
  w.on('completed', (_job, result) => completed.push(result));
  assert.deepEqual(w.queues, ['multi-emails', 'multi-reports']);
  await w.start();
  try {
    await waitFor('twelve completions', () => completed.length === 12);
    assert.deepEqual(seen.emails, Array(6).fill('multi-emails'));
    assert.deepEqual(seen.reports, Array(6).fill('multi-reports'));
    assert.equal(most, 3, 'three at once across both queues, never more');
    const info = await client.workers.get(w.workerId!);
    assert.deepEqual([...(info.queueNames ?? [])].sort(), ['multi-emails', 'multi-reports']);

    // A job of the second queue is cancelled through the organization's stream, long before a heartbeat.
    let abortedAt = 0;
    const slow = new Worker(client, { queues: { 'multi-emails': () => null, 'multi-slow': (_job, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => {
      abortedAt = Date.now();
      reject(ctx.signal.reason);
    })) }, waitMs: 1000, leaseSeconds: 30 });
    slow.on('error', () => {});
    await slow.start();
    try {
      const { id } = await client.jobs.create({ queueName: 'multi-slow', payload: {} });
      await waitFor('running', () => slow.runningCount === 1);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the stream is connected by now
      const askedAt = Date.now();
      assert.equal(await client.jobs.cancel(id), 'cancel_requested');
      await waitFor('aborted', () => abortedAt > 0, 3000);
      assert.ok(abortedAt - askedAt < 1000, `signal fired after ${abortedAt - askedAt} ms`);
    } finally {
      await slow.stop({ graceMs: 0 });
    }
  } finally {
    await w.stop();
  }
  assert.throws(() => new Worker(client, {}), /either `queue` or `queues`/);
  assert.throws(() => new Worker(client, { queue: 'a', queues: ['b'] }), /either `queue` or `queues`/);
  assert.throws(() => new Worker(client, { queues: [] }), /1 to 32 queues/);
  await assert.rejects(new Worker(client, { queues: ['multi-a', 'multi-b'] }).start(), /handle\(fn\) first/);
});
