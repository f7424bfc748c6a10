/**
 * Cancelling jobs: before they start, and while they run.
 *
 *   SPOOL_API_KEY=sk_test_... npx tsx examples/cancellation.ts
 *
 * 1. A job scheduled for later is cancelled before it starts: it ends
 *    `cancelled` at once and never runs.
 * 2. A long export job is cancelled while a worker runs it. Spool cannot stop
 *    someone else's code, so it asks: the worker learns of the request from
 *    the queue's realtime stream within moments (or, failing that, from its
 *    next heartbeat) and aborts the handler's `ctx.signal`. The handler stops
 *    cooperatively: it checks the signal between chunks, passes it to what it
 *    awaits, and cleans up. The worker reports back and the job ends
 *    `cancelled`, without retry.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { JobCancelledError, Worker } from '@spool/sdk';
import { check, clock, runExample, waitUntil } from './support.js';

const QUEUE = 'example-exports';

interface Export {
  report: string;
  chunks: number;
}

await runExample('cancellation', async (spool) => {
  // 1. Before it starts.
  const later = await spool.jobs.create<Export>({ queueName: QUEUE, payload: { report: 'yearly', chunks: 10 }, scheduledAt: new Date(Date.now() + 3_600_000) });
  const outcome = await spool.jobs.cancel(later.id);
  const cancelledEarly = await spool.jobs.get(later.id);
  console.log(`job ${later.id}, scheduled in an hour: cancel → ${outcome}; status now ${cancelledEarly.status}`);
  check(outcome === 'cancelled' && cancelledEarly.status === 'cancelled', 'a job that has not started must be cancelled at once');

  // 2. While it runs.
  const worker = new Worker<Export>(spool, { queue: QUEUE, concurrency: 1 });
  let abortedAt = 0;
  worker.handle(async (job, ctx) => {
    for (let chunk = 1; chunk <= job.payload.chunks; chunk++) {
      try {
        ctx.signal.throwIfAborted();
        await sleep(100, undefined, { signal: ctx.signal }); // "write" one chunk; aborting the signal cuts the wait short
      } catch (err) {
        abortedAt = Date.now();
        const reason = ctx.signal.reason;
        console.log(`${clock()} handler: signal aborted at chunk ${chunk} (${reason instanceof Error ? reason.name : reason}); removing the partial file`);
        throw reason ?? err;
      }
    }
    return { rows: job.payload.chunks * 1000 };
  });
  const started = new Promise<void>((resolve) => worker.on('started', () => resolve()));
  const ended = new Promise<{ error: unknown }>((resolve) => {
    worker.on('failed', (_job, error) => resolve({ error }));
    worker.on('completed', () => resolve({ error: null }));
  });
  await worker.start();

  const running = await spool.jobs.create<Export>({ queueName: QUEUE, payload: { report: 'all orders', chunks: 300 } }); // 30 s of work
  await started;
  await sleep(300); // let it write a few chunks
  const askedAt = Date.now();
  const answer = await spool.jobs.cancel(running.id);
  console.log(`${clock()} cancel ${running.id} while it runs → ${answer}`);
  check(answer === 'cancel_requested', `cancelling a running job should answer cancel_requested, got ${answer}`);

  const { error } = await ended;
  check(error instanceof JobCancelledError, `the handler's signal should abort with JobCancelledError, got ${String(error)}`);
  console.log(`the handler stopped ${abortedAt - askedAt} ms after the cancel request`);
  await waitUntil('the job to end cancelled', async () => (await spool.jobs.get(running.id)).status === 'cancelled');
  const final = await spool.jobs.get(running.id);
  console.log(`job ${running.id}: status ${final.status}, retries used ${final.retryCount}`);
  check(final.retryCount === 0, 'a cancelled job is not retried');
  await worker.stop();
});
