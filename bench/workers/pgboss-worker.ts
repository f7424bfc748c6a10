/**
 * pg-boss in its fast configuration: LISTEN/NOTIFY wakeups, batch fetches of
 * 100 (the handler gets an array and the batch is completed in one call),
 * burst fetching while batches come back full.
 */
import { PgBoss } from 'pg-boss';
import { nowMs } from '../lib/http.js';
import { onControl, workerReporter } from '../lib/children.js';

const report = workerReporter();
const boss = new PgBoss({ connectionString: process.env.DATABASE_URL!, useListenNotify: true, schedule: false, max: 10 });
boss.on('error', (err) => report.error(err));
await boss.start();
const go = onControl(async () => {
  report.flush();
  await boss.stop({ graceful: false, timeout: 2000 }).catch(() => {});
});
process.send?.({ type: 'ready' });
await go;
await boss.work<{ t?: number }>(process.env.QUEUE ?? 'bench', {
  batchSize: Number(process.env.BATCH ?? 100),
  localConcurrency: Number(process.env.LOOPS ?? 2),
  burstWhenBatchFull: true,
  pollingIntervalSeconds: 0.5,
}, async (jobs) => {
  const started = nowMs();
  for (const job of jobs) if (typeof job.data?.t === 'number') report.latency(job.data.t, started);
  report.done(jobs.length);
});
report.started();
