/**
 * Workflows through the SDK against the real server: a DAG processed by the
 * SDK's Worker runs in dependency order, and the workflow reads completed
 * with full counters the moment its last job completes.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { SpoolClient, Worker } from '../src/index.js';

let server: TestServer;
let client: SpoolClient;

before(async () => {
  server = await startTestServer('sdk_workflow');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
});
after(() => server.close());

test('a DAG A → {B, C} → D run by the SDK worker completes in dependency order', async () => {
  const created = await client.workflows.create({
    name: 'etl',
    jobs: [
      { key: 'A', queueName: 'sdk-dag', payload: { step: 'A' } },
      { key: 'B', queueName: 'sdk-dag', payload: { step: 'B' }, dependsOn: ['A'] },
      { key: 'C', queueName: 'sdk-dag', payload: { step: 'C' }, dependsOn: ['A'] },
      { key: 'D', queueName: 'sdk-dag', payload: { step: 'D' }, dependsOn: ['B', 'C'] },
    ],
  });
  const order: string[] = [];
  const statusAtD: string[] = [];
  const worker = new Worker<{ step: string }>(client, { queue: 'sdk-dag', concurrency: 4, waitMs: 500 });
  worker.on('error', () => {});
  let finished!: () => void;
  const done = new Promise<void>((resolve) => { finished = resolve; });
  worker.handle(async (job) => {
    order.push(job.payload.step);
    if (job.payload.step === 'D') statusAtD.push((await client.workflows.get(created.workflowId)).status);
    if (order.length === 4) finished();
    return { step: job.payload.step };
  });
  await worker.start();
  try {
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`DAG did not finish: ${order.join(',')}`)), 20_000))]);
  } finally {
    await worker.stop(); // reports D's completion before it returns
  }
  assert.equal(order[0], 'A');
  assert.deepEqual(order.slice(1, 3).sort(), ['B', 'C']);
  assert.equal(order[3], 'D');
  assert.deepEqual(statusAtD, ['running']);
  const workflow = await client.workflows.get(created.workflowId);
  assert.equal(workflow.status, 'completed');
  assert.equal(workflow.completedJobs, 4);
  assert.equal(workflow.progressPercent, 100);
  const jobs = await client.workflows.jobs(created.workflowId);
  assert.deepEqual(jobs.map((job) => [job.key, job.status]), [['A', 'completed'], ['B', 'completed'], ['C', 'completed'], ['D', 'completed']]);
});
