/**
 * ctx.progress() and ctx.log() against the real server: what a handler
 * reports is stored with the job, lines are batched, and the last lines are
 * sent before the job's outcome.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { LeaseLostError, SpoolClient, ValidationError, Worker, type JobContext } from '../src/index.js';
import { FakeSpoolClient } from '../src/testing/index.js';

let server: TestServer;
let client: SpoolClient;
/** POST /jobs/{id}/logs requests seen by the counting client, by job id. */
const logPosts = new Map<string, number>();

before(async () => {
  server = await startTestServer('sdk_progress');
  const counting: typeof fetch = (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const match = /\/jobs\/([^/]+)\/logs$/.exec(url);
    if (match && init?.method === 'POST') logPosts.set(match[1]!, (logPosts.get(match[1]!) ?? 0) + 1);
    return fetch(input, init);
  };
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey, fetch: counting });
});
after(() => server.close());

/** Runs one job of `queue` through a real Worker with `handler`; resolves when it completed or failed. */
async function runOne(queue: string, handler: (ctx: JobContext) => Promise<unknown>, on: SpoolClient = client): Promise<{ id: string; outcome: 'completed' | 'failed'; errors: unknown[] }> {
  const { id } = await client.jobs.create({ queueName: queue, payload: {}, maxRetries: 0 });
  const worker = new Worker(on, { queue, waitMs: 500, cancelStream: false });
  const errors: unknown[] = [];
  worker.on('error', (err) => errors.push(err));
  const done = new Promise<'completed' | 'failed'>((resolve, reject) => {
    worker.on('completed', () => resolve('completed'));
    worker.on('failed', () => resolve('failed'));
    setTimeout(() => reject(new Error(`job of ${queue} neither completed nor failed; errors: ${errors.join('; ')}`)), 15_000).unref();
  });
  worker.handle((_job, ctx) => handler(ctx));
  await worker.start();
  try {
    return { id, outcome: await done, errors };
  } finally {
    await worker.stop();
  }
}

test('a handler reports progress and log lines; the last lines are stored before the job completes', async () => {
  const { id, outcome, errors } = await runOne('sdk-progress', async (ctx) => {
    await ctx.progress(10, 'starting', { step: 1 });
    ctx.log('one', 'two\nthree', { k: 1 });
    await ctx.progress(90);
    ctx.log('last line before return');
    return 'ok';
  });
  assert.equal(outcome, 'completed');
  assert.deepEqual(errors, []);
  const lines = await client.jobs.logs(id);
  assert.deepEqual(lines.map((l) => l.line), ['one', 'two', 'three', '{"k":1}', 'last line before return']);
  const job = await client.jobs.get(id);
  assert.ok(Date.parse(lines.at(-1)!.at) <= Date.parse(job.completedAt!), 'the last line was written before the completion');
  const progress = await client.jobs.getProgress(id);
  assert.equal(progress?.percent, 90);
  assert.equal(progress?.message, 'starting', 'an omitted message keeps the last one');
  assert.deepEqual(progress?.metadata, { step: 1 });
});

test('log lines go in batches of 50 (and the rest at the end), in order', async () => {
  const { id } = await runOne('sdk-log-batch', async (ctx) => {
    for (let i = 0; i < 120; i++) ctx.log(`line ${i}`);
    return null;
  });
  assert.equal(logPosts.get(id), 3, '50 + 50 + 20');
  const lines = await client.jobs.logs(id);
  assert.deepEqual(lines.map((l) => l.line), Array.from({ length: 120 }, (_, i) => `line ${i}`));
});

test('lines logged a moment apart are sent within about 200 ms, while the job runs', async () => {
  let seen: string[] = [];
  await runOne('sdk-log-timer', async (ctx) => {
    ctx.log('early');
    const { id } = (await client.jobs.list({ queueName: 'sdk-log-timer', status: 'processing' }))[0]!;
    const deadline = Date.now() + 2000;
    while (seen.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      seen = (await client.jobs.logs(id)).map((l) => l.line);
    }
    return null;
  });
  assert.deepEqual(seen, ['early']);
});

test('a bad progress value rejects in the handler with ValidationError', async () => {
  let rejected: unknown;
  const { outcome } = await runOne('sdk-progress-bad', async (ctx) => {
    rejected = await ctx.progress(150).catch((err: unknown) => err);
    return null;
  });
  assert.equal(outcome, 'completed');
  assert.ok(rejected instanceof ValidationError, String(rejected));
  assert.match((rejected as Error).message, /percent/);
});

test('a stale lease rejects ctx.progress with LeaseLostError and aborts the handler, like a refused heartbeat', async () => {
  let rejected: unknown;
  let aborted: unknown;
  const queue = 'sdk-progress-lost';
  const worker = new Worker(client, { queue, waitMs: 500, cancelStream: false });
  const errors: unknown[] = [];
  worker.on('error', (err) => errors.push(err));
  const { id } = await client.jobs.create({ queueName: queue, payload: {} });
  const finished = new Promise<void>((resolve) => {
    worker.handle(async (_job, ctx) => {
      // Another claim took over: the lease this worker holds is stale now.
      await server.database.pool.query("UPDATE spool.jobs SET lease_id = gen_random_uuid() WHERE id = $1", [id]);
      rejected = await ctx.progress(5).catch((err: unknown) => err);
      aborted = ctx.signal.reason;
      resolve();
    });
  });
  await worker.start();
  await finished;
  await worker.stop();
  assert.ok(rejected instanceof LeaseLostError, String(rejected));
  assert.ok(aborted instanceof LeaseLostError, 'the handler signal aborted');
  // The handler returned, but a lost job is not reported (deregistration handed it back).
  const after = await client.jobs.get(id);
  assert.equal(after.status, 'pending');
  assert.equal(after.retryCount, 0);
});

test('on a server without the endpoints ctx.progress and ctx.log do nothing, once asked', async () => {
  // A client whose server answers the report routes like an older Spool: its router's 404.
  let reportCalls = 0;
  const older: typeof fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (/\/jobs\/[^/]+\/(progress|logs)$/.test(url)) {
      reportCalls += 1;
      return new Response(JSON.stringify({ code: 'NOT_FOUND', message: `Route POST ${new URL(url).pathname} not found`, details: {} }), { status: 404, headers: { 'content-type': 'application/json' } });
    }
    return fetch(input, init);
  };
  const onOlder = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey, fetch: older });
  const { outcome, errors } = await runOne('sdk-progress-older', async (ctx) => {
    await ctx.progress(10, 'ignored');
    await ctx.progress(20);
    ctx.log('ignored too');
    return 'done';
  }, onOlder);
  assert.equal(outcome, 'completed');
  assert.deepEqual(errors, []);
  assert.equal(reportCalls, 1, 'the first 404 turned reports off');
});

test('the fake client keeps what an inline handler reports', async () => {
  const spool = new FakeSpoolClient();
  const { id } = await spool.jobs.create({ queueName: 'fake-progress', payload: {} });
  await spool.runJobs('fake-progress', async (_job, ctx) => {
    await ctx.progress(50, 'half');
    ctx.log('a\nb');
  });
  assert.equal((await spool.jobs.getProgress(id))?.percent, 50);
  assert.deepEqual((await spool.jobs.logs(id)).map((l) => l.line), ['a', 'b']);
});
