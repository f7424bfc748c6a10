/**
 * Enqueue jobs and process them with a Worker.
 *
 *   SPOOL_API_KEY=sk_test_... npx tsx examples/enqueue-and-process.ts
 *
 * Enqueues one job with an idempotency key (and shows that repeating it
 * creates nothing), three more in one bulk request, then runs a Worker that
 * "sends" each email and returns a result, which becomes the job's result.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from '@spool/sdk';
import { check, clock, runExample, runId } from './support.js';

const QUEUE = 'example-emails';

interface Email {
  to: string;
  template: string;
}

await runExample('enqueue and process', async (spool) => {
  // 1. One job. The idempotency key makes a retried request safe: the repeat returns the same job.
  const key = `welcome:ada@example.com:${runId}`;
  const first = await spool.jobs.create<Email>({ queueName: QUEUE, payload: { to: 'ada@example.com', template: 'welcome' }, idempotencyKey: key });
  const repeat = await spool.jobs.create<Email>({ queueName: QUEUE, payload: { to: 'ada@example.com', template: 'welcome' }, idempotencyKey: key });
  console.log(`enqueued ${first.id} (created: ${first.created}); the same request again → ${repeat.id} (created: ${repeat.created})`);
  check(first.created && !repeat.created && repeat.id === first.id, 'a repeated idempotency key must return the first job');

  // 2. Several jobs in one request.
  const bulk = await spool.jobs.bulk<Email>({
    queueName: QUEUE,
    jobs: ['grace', 'alan', 'barbara'].map((name) => ({ payload: { to: `${name}@example.com`, template: 'newsletter' } })),
  });
  console.log(`bulk enqueue: ${bulk.successCount} created, ${bulk.failureCount} failed`);
  check(bulk.successCount === 3, 'the bulk request must create three jobs');
  const ours = new Set([first.id, ...bulk.succeeded.map((item) => item.jobId)]);

  // 3. A worker: the handler's return value completes the job; a throw would fail it.
  const worker = new Worker<Email>(spool, { queue: QUEUE, concurrency: 2 });
  worker.handle(async (job, ctx) => {
    await sleep(200, undefined, { signal: ctx.signal }); // the "email provider"
    return { messageId: `msg-${job.id.slice(-8)}`, to: job.payload.to };
  });
  const allDone = new Promise<void>((resolve) => {
    worker.on('completed', (job, result) => {
      console.log(`${clock()} completed ${job.id} → ${JSON.stringify(result)}`);
      ours.delete(job.id);
      if (ours.size === 0) resolve();
    });
  });
  worker.on('started', (job) => console.log(`${clock()} started   ${job.id} (to ${job.payload.to})`));
  worker.on('failed', (job, error) => console.log(`${clock()} failed    ${job.id}: ${error}`));
  await worker.start();
  console.log(`worker ${worker.workerId} is processing ${QUEUE} (concurrency 2)`);
  await allDone;
  await worker.stop();

  // 4. The result is stored on the job.
  const done = await spool.jobs.get(first.id);
  console.log(`job ${done.id}: status ${done.status}, result ${JSON.stringify(done.result)}`);
  check(done.status === 'completed', `job ${first.id} should be completed, is ${done.status}`);
  check((done.result as { to?: string } | null)?.to === 'ada@example.com', 'the handler result should be stored on the job');
  console.log('all 4 jobs completed');
});
