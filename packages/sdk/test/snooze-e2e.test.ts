/**
 * ctx.snooze() and jobs.snooze() against the real server: a handler that
 * puts its job off gets it back after the delay with no attempt used.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { ConflictError, JobSnoozedError, NotFoundError, SpoolClient, Worker, type ClaimedJob, type JobContext } from '../src/index.js';
import { FakeSpoolClient } from '../src/testing/index.js';

let server: TestServer;
let client: SpoolClient;

before(async () => {
  server = await startTestServer('sdk_snooze');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
});
after(() => server.close());

/** Resolves with the first value `check` returns within 20 s (the promoter and a 1 s snooze on a loaded machine). */
async function waitFor<T>(what: string, check: () => T | null | undefined | Promise<T | null | undefined>): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await check();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a handler that snoozes once and then completes: the job completes with retry_count 0', async () => {
  const queue = 'sdk-snooze-once';
  const { id } = await client.jobs.create({ queueName: queue, payload: {}, maxRetries: 0 });
  const worker = new Worker(client, { queue, waitMs: 500, cancelStream: false });
  const errors: unknown[] = [];
  const runs: { attempt: number; abortedBy: unknown }[] = [];
  const snoozed: [string, number][] = [];
  const completed: string[] = [];
  worker.on('error', (err) => errors.push(err));
  worker.on('snoozed', (job, delaySecs) => snoozed.push([job.id, delaySecs]));
  worker.on('completed', (job) => completed.push(job.id));
  worker.on('failed', (job, err) => errors.push(new Error(`job ${job.id} failed: ${String(err)}`)));
  worker.handle((_job: ClaimedJob, ctx: JobContext) => {
    const run = { attempt: ctx.attempt, abortedBy: undefined as unknown };
    runs.push(run);
    if (runs.length === 1) {
      ctx.signal.addEventListener('abort', () => (run.abortedBy = ctx.signal.reason));
      ctx.log('not yet');
      return ctx.snooze(1);
    }
    return 'done';
  });
  await worker.start();
  try {
    await waitFor('the completion', () => (completed.length > 0 ? true : null));
  } finally {
    await worker.stop();
  }
  assert.deepEqual(errors, []);
  assert.deepEqual(snoozed, [[id, 1]]);
  assert.deepEqual(runs.map((r) => r.attempt), [1, 1], 'the run after the snooze is still the first attempt');
  assert.ok(runs[0]!.abortedBy instanceof JobSnoozedError, 'the signal aborts with the snooze');
  const job = await client.jobs.get(id);
  assert.equal(job.status, 'completed');
  assert.equal(job.retryCount, 0);
  assert.equal(job.result, 'done');
  const events = ((await server.request('GET', `/api/v1/jobs/${id}/history`)).body as { event: string }[]).map((e) => e.event);
  assert.ok(events.includes('snooze'), `history has the snooze: ${events.join(', ')}`);
  assert.deepEqual((await client.jobs.logs(id)).map((l) => l.line), ['not yet'], 'lines logged before the snooze were sent first');
});

test('a snooze the handler catches still decides the run; a bad delay fails the job like any throw', async () => {
  const queue = 'sdk-snooze-caught';
  const caught = await client.jobs.create({ queueName: queue, payload: { kind: 'caught' }, maxRetries: 0 });
  const bad = await client.jobs.create({ queueName: queue, payload: { kind: 'bad' }, maxRetries: 0 });
  const worker = new Worker(client, { queue, waitMs: 500, cancelStream: false });
  const snoozed: string[] = [];
  const failed: [string, unknown][] = [];
  const completed: string[] = [];
  worker.on('error', () => {});
  worker.on('snoozed', (job) => snoozed.push(job.id));
  worker.on('failed', (job, err) => failed.push([job.id, err]));
  worker.on('completed', (job) => completed.push(job.id));
  worker.handle((job, ctx) => {
    if ((job.payload as { kind: string }).kind === 'bad') return ctx.snooze(0);
    try {
      ctx.snooze(600);
    } catch {
      // swallowed on purpose: the snooze stands
    }
    return 'ignored';
  });
  await worker.start();
  try {
    await waitFor('both outcomes', () => (snoozed.length + failed.length >= 2 ? true : null));
  } finally {
    await worker.stop();
  }
  assert.deepEqual(snoozed, [caught.id]);
  assert.deepEqual(completed, []);
  assert.equal(failed.length, 1);
  assert.equal(failed[0]![0], bad.id);
  assert.ok(failed[0]![1] instanceof RangeError);
  const waiting = await client.jobs.get(caught.id);
  assert.equal(waiting.status, 'pending');
  assert.equal(waiting.retryCount, 0);
  assert.ok(Date.parse(waiting.scheduledAt!) > Date.now() + 60_000, 'waits out the 600 s');
});

test('client.jobs.snooze answers in camelCase and is fenced', async () => {
  const queue = 'sdk-snooze-direct';
  const { id } = await client.jobs.create({ queueName: queue, payload: {} });
  const [claimed] = await client.jobs.claim({ queueName: queue, workerId: 'w-direct', limit: 1 });
  assert.equal(claimed?.id, id);
  await assert.rejects(client.jobs.snooze(id, { workerId: 'someone-else', delaySecs: 5 }), NotFoundError);
  await assert.rejects(client.jobs.snooze(id, { workerId: 'w-direct', leaseId: '00000000-0000-4000-8000-000000000000', delaySecs: 5 }), (err: unknown) => err instanceof ConflictError && err.code === 'LEASE_EXPIRED');
  const answer = await client.jobs.snooze(id, { workerId: 'w-direct', leaseId: claimed!.leaseId, delaySecs: 30 });
  assert.equal(answer.success, true);
  assert.equal(answer.status, 'pending');
  assert.equal(answer.retryCount, 0);
  assert.ok(answer.scheduledAt && Date.parse(answer.scheduledAt) > Date.now());
});

test('FakeSpoolClient: runJobs counts a snooze and the job waits for the clock', async () => {
  let now = new Date('2026-01-01T00:00:00Z');
  const fake = new FakeSpoolClient({ now: () => now });
  const { id } = await fake.jobs.create({ queueName: 'fake-snooze', payload: {} });
  let runs = 0;
  const handler = (_job: ClaimedJob, ctx: JobContext) => (++runs === 1 ? ctx.snooze(60) : 'ok');
  const first = await fake.runJobs('fake-snooze', handler);
  assert.deepEqual([first.runs, first.snoozed, first.completed.length], [1, 1, 0]);
  assert.equal(fake.jobs.find(id).status, 'pending');
  now = new Date(now.getTime() + 61_000);
  const second = await fake.runJobs('fake-snooze', handler);
  assert.deepEqual([second.runs, second.snoozed, second.completed.length], [1, 0, 1]);
  assert.equal(fake.jobs.find(id).retryCount, 0);
});
