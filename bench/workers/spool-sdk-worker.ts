/**
 * A Spool worker as users run it: the SDK's `Worker` (packages/sdk) with a
 * no-op handler. It claims with the long poll, runs up to CONCURRENCY jobs at
 * once, heartbeats leases and reports outcomes in batches, all as the SDK
 * does by default; only the numbers below are the bench's.
 */
import { SpoolClient, Worker } from '@spool/sdk';
import { onControl, workerReporter } from '../lib/children.js';

const queue = process.env.QUEUE ?? 'bench';
const concurrency = Number(process.env.CONCURRENCY ?? 400);
const batch = Number(process.env.BATCH ?? 100);
const waitMs = Number(process.env.WAIT_MS ?? 1000);
const report = workerReporter();

const client = new SpoolClient({ baseUrl: process.env.SPOOL_URL!, apiKey: process.env.API_KEY! });
const worker = new Worker<{ t?: number }>(client, {
  queue,
  concurrency,
  maxBatch: batch,
  waitMs,
  leaseSeconds: 300,
  // The bench measures the job path; cancellation of running no-op jobs is not exercised.
  cancelStream: false,
});
worker.handle(async () => null);
worker.on('started', (job) => {
  if (typeof job.payload?.t === 'number') report.latency(job.payload.t);
});
worker.on('completed', () => report.done(1));
worker.on('error', (err) => report.error(err));

const go = onControl(async () => {
  await worker.stop({ graceMs: 5_000 });
  report.flush();
});
process.send?.({ type: 'ready' });
await go;
await worker.start();
// The first claim is on the wire; give the server a moment to park it.
setTimeout(() => report.started(), 100);
