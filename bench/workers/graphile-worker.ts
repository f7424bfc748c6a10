/**
 * graphile-worker in its documented fast configuration (worker.graphile.org
 * "Performance"): concurrentJobs 24, maxPoolSize 25, localQueue 500, batch
 * delays 0 (CONCURRENCY overrides concurrentJobs, with a pool one larger).
 * The no-op task reports completions and enqueue-to-start latency.
 */
import { run, type Runner } from 'graphile-worker';
import { onControl, workerReporter } from '../lib/children.js';

const report = workerReporter();
const concurrency = Number(process.env.CONCURRENCY ?? 24);
let runner: Runner | null = null;
// Completions are counted when the task returns; graphile then deletes the
// row in a batch, so the harness also waits for the table to be empty.
const go = onControl(async () => {
  report.flush();
  await runner?.stop();
});
process.send?.({ type: 'ready' });
await go;
runner = await run({
  noHandleSignals: true,
  preset: {
    worker: {
      connectionString: process.env.DATABASE_URL!,
      concurrentJobs: concurrency,
      maxPoolSize: concurrency + 1,
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
      pollInterval: 2000,
    },
  },
  logger: new (await import('graphile-worker')).Logger(() => () => {}),
  taskList: {
    noop: async (payload) => {
      const t = (payload as { t?: number } | null)?.t;
      if (typeof t === 'number') report.latency(t);
      report.done(1);
    },
  },
});
report.started();
