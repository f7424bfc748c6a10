/**
 * on_parent_failure and ctx.dependencyResults() against the real server: a
 * workflow step released by a failed dependency (`continue`) reads, with a
 * worker key, how that dependency failed.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { NonRetryableError, SpoolClient, Worker, type ClaimedJob, type DependencyResult, type JobContext } from '../src/index.js';
import { FakeSpoolClient } from '../src/testing/index.js';

let server: TestServer;
let client: SpoolClient;

before(async () => {
  server = await startTestServer('sdk_dependency_results');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
});
after(() => server.close());

async function waitFor<T>(what: string, check: () => T | null | undefined | Promise<T | null | undefined>): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await check();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a step after a failed dependency (continue) reads its error with a worker key; cancel and block act too', async () => {
  const queue = 'sdk-deps';
  const created = await client.workflows.create({
    name: 'extract then load',
    onParentFailure: 'cancel',
    jobs: [
      { key: 'extractRows2', queueName: queue, payload: { step: 'extractRows2' }, maxRetries: 0 },
      // Keyed by the user's own key: the SDK must not rename it on the wire.
      { key: 'load', queueName: queue, payload: { step: 'load' }, dependsOn: ['extractRows2'], onParentFailure: { extractRows2: 'continue' } },
      { key: 'report', queueName: queue, payload: { step: 'report' }, dependsOn: ['extractRows2'] },
      { key: 'archive', queueName: queue, payload: { step: 'archive' }, dependsOn: ['extractRows2'], onParentFailure: 'block' },
    ],
  });
  const ids = Object.fromEntries(created.jobIds.map((j) => [j.key, j.jobId]));
  const key = await server.request('POST', '/api/v1/api-keys', { body: { name: 'sdk deps worker', role: 'worker' } });
  assert.equal(key.status, 201, key.text);
  const workerClient = new SpoolClient({ baseUrl: server.url, apiKey: key.body.key });

  const seen: DependencyResult[][] = [];
  const worker = new Worker<{ step: string }>(workerClient, { queue, waitMs: 500, cancelStream: false });
  const errors: unknown[] = [];
  worker.on('error', (err) => errors.push(err));
  worker.handle(async (job: ClaimedJob<{ step: string }>, ctx: JobContext) => {
    if (job.payload.step === 'extractRows2') throw new NonRetryableError('source database is down');
    seen.push(await ctx.dependencyResults());
    return { loaded: 0 };
  });
  await worker.start();
  try {
    await waitFor('load to complete', async () => ((await client.jobs.get(ids.load!)).status === 'completed' ? true : null));
  } finally {
    await worker.stop();
  }
  assert.deepEqual(errors, []);
  assert.equal(seen.length, 1, 'only load ran');
  const [extract] = seen[0]!;
  assert.equal(extract!.jobId, ids.extractRows2);
  assert.equal(extract!.key, 'extractRows2');
  assert.equal(extract!.status, 'deadletter');
  assert.equal(extract!.result, null);
  assert.match(extract!.error!, /source database is down/);
  assert.equal(extract!.onParentFailure, 'continue');
  assert.ok(extract!.completedAt);
  assert.deepEqual(await client.jobs.dependencyResults(ids.load!), seen[0], 'the same answer for the admin key');

  assert.equal((await client.jobs.get(ids.report!)).status, 'cancelled', 'the workflow default');
  assert.equal((await client.jobs.get(ids.archive!)).status, 'pending', 'its own block');
  const jobs = await client.workflows.jobs(created.workflowId);
  assert.deepEqual(jobs.find((j) => j.key === 'load')!.onParentFailure, { [ids.extractRows2!]: 'continue' });
  assert.deepEqual(jobs.find((j) => j.key === 'report')!.onParentFailure, { [ids.extractRows2!]: 'cancel' });
  const deps = await client.jobs.getDependencies(ids.archive!);
  assert.equal(deps.dependencies[0]!.onParentFailure, 'block');
});

test('addDependencies stores onParentFailure; the fake answers dependencyResults with []', async () => {
  const parent = await client.jobs.create({ queueName: 'sdk-deps-add', payload: {} });
  const child = await client.jobs.create({ queueName: 'sdk-deps-add-child', payload: {} });
  const added = await client.jobs.addDependencies(child.id, { dependsOnJobIds: [parent.id], onParentFailure: 'continue' });
  assert.deepEqual(added.dependencies.map((d) => d.onParentFailure), ['continue']);
  assert.equal(added.status, 'pending');
  assert.deepEqual((await client.jobs.dependencyResults(child.id)).map((r) => [r.jobId, r.status, r.onParentFailure]), [[parent.id, 'pending', 'continue']]);

  const fake = new FakeSpoolClient();
  await fake.jobs.create({ queueName: 'q', payload: {} });
  let answer: unknown = null;
  await fake.runJobs('q', async (_job, ctx) => {
    answer = await ctx.dependencyResults();
  });
  assert.deepEqual(answer, []);
});
