/**
 * Retries with backoff, the dead-letter queue, and replaying from it.
 *
 *   SPOOL_API_KEY=sk_test_... npx tsx examples/retries-and-dlq.ts
 *
 * A "charge" job calls a payment provider that is down. The handler throws,
 * so Spool retries the job after a backoff (about 1 s, then 2 s) until its
 * `maxRetries` are used up, then moves it to the dead-letter queue. A second
 * job has a payload that can never work: the handler throws
 * `NonRetryableError` and the job goes to the dead-letter queue at once.
 * Then the provider comes back, the charge is replayed from the dead-letter
 * queue and completes, and the hopeless job is purged.
 */
import { NonRetryableError, Worker } from '@spool/sdk';
import { check, clock, runExample, waitUntil } from './support.js';

const QUEUE = 'example-payments';

interface Charge {
  orderId: string;
  amountCents: number;
}

let providerUp = false; // flipped once the dead-letter queue holds the charge

await runExample('retries and the dead-letter queue', async (spool) => {
  const charge = await spool.jobs.create<Charge>({ queueName: QUEUE, payload: { orderId: 'order-1001', amountCents: 4200 }, maxRetries: 2 });
  const hopeless = await spool.jobs.create<Charge>({ queueName: QUEUE, payload: { orderId: 'order-1002', amountCents: -5 }, maxRetries: 2 });
  console.log(`enqueued charge ${charge.id} (maxRetries 2) and a charge with a negative amount ${hopeless.id}`);

  const worker = new Worker<Charge>(spool, { queue: QUEUE, concurrency: 2 });
  worker.handle(async (job, ctx) => {
    if (job.payload.amountCents <= 0) throw new NonRetryableError(`amount must be positive, got ${job.payload.amountCents}`);
    if (!providerUp) throw new Error('payment provider unavailable (503)');
    return { chargedCents: job.payload.amountCents, attempt: ctx.attempt };
  });
  worker.on('failed', (job, error, { willRetry }) => {
    const what = willRetry ? 'will retry after a backoff' : 'moved to the dead-letter queue';
    console.log(`${clock()} attempt ${job.retryCount + 1} of ${job.id} failed: ${(error as Error).message} → ${what}`);
  });
  const completed = new Promise<unknown>((resolve) => worker.on('completed', (job, result) => job.id === charge.id && resolve(result)));
  await worker.start();

  // Both end in the dead-letter queue: the charge after 3 attempts, the hopeless job after 1.
  await waitUntil('both jobs in the dead-letter queue', async () => {
    const statuses = await spool.jobs.statuses([charge.id, hopeless.id]);
    return statuses.length === 2 && statuses.every((s) => s.status === 'deadletter');
  });
  const dead = await spool.jobs.get(charge.id);
  const doomed = await spool.jobs.get(hopeless.id);
  console.log(`charge: ${dead.status} after ${dead.retryCount + 1} attempts; last error: ${dead.lastError?.split('\n')[0]}`);
  console.log(`hopeless: ${doomed.status} after ${doomed.retryCount + 1} attempt; last error: ${doomed.lastError?.split('\n')[0]}`);
  check(dead.retryCount === 2, `the charge should have been retried twice, was retried ${dead.retryCount} times`);
  check(doomed.retryCount === 0, 'a NonRetryableError must not be retried');

  const dlq = await spool.dlq.list({ queueName: QUEUE, limit: 100 });
  console.log(`dead-letter queue of ${QUEUE}: ${dlq.length} job(s)`);
  check([charge.id, hopeless.id].every((id) => dlq.some((row) => row.id === id)), 'both jobs should be listed in the dead-letter queue');

  // The provider is back: replay the charge (its retry count starts again at 0).
  providerUp = true;
  const replay = await spool.dlq.retry({ jobIds: [charge.id] });
  console.log(`${clock()} replayed ${replay.retriedCount} job(s) from the dead-letter queue`);
  const result = await completed;
  console.log(`${clock()} charge completed: ${JSON.stringify(result)}`);
  await worker.stop();
  check((await spool.jobs.get(charge.id)).status === 'completed', 'the replayed charge should be completed');

  // The hopeless job is not worth replaying: purge the queue's dead letters.
  const purged = await spool.dlq.purge({ queueName: QUEUE, confirm: true });
  console.log(`purged ${purged.purgedCount} job(s) from the dead-letter queue`);
  check(!(await spool.dlq.list({ queueName: QUEUE })).some((row) => row.id === hopeless.id), 'the hopeless job should be purged');
});
