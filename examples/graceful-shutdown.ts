/**
 * Graceful shutdown: SIGTERM → the worker's two-phase stop.
 *
 *   SPOOL_API_KEY=sk_test_... npx tsx examples/graceful-shutdown.ts          # signals itself
 *   SPOOL_API_KEY=sk_test_... npx tsx examples/graceful-shutdown.ts --wait   # waits for your Ctrl-C / kill
 *
 * The library installs no signal handlers: the application decides what a
 * signal means. Here, as in a deployment, the first SIGTERM (or Ctrl-C)
 * calls `worker.stop({ graceMs })`:
 *
 *   phase 1: stop claiming; running jobs get `graceMs` to finish;
 *   phase 2: jobs still running see `ctx.signal` abort (WorkerShutdownError)
 *            and are handed back to the queue, without using a retry.
 *
 * A second signal stops at once (`graceMs: 0`). Three short thumbnail jobs
 * finish within the grace period; a long transcode does not, goes back to
 * the queue and is finished by "the next deployment" (a second worker).
 * Nothing is lost and nothing is completed twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker, type SpoolClient, type StopResult } from '@spool/sdk';
import { check, clock, runExample } from './support.js';

const QUEUE = 'example-media';
const GRACE_MS = 2_000;
const waitForRealSignal = process.argv.includes('--wait');

interface Media {
  task: 'thumbnail' | 'transcode';
  file: string;
  ms: number;
}

/** The same handler in both deployments: works `ms` in slices, stopping when the signal aborts. */
async function work(job: { id: string; payload: Media }, signal: AbortSignal): Promise<{ file: string }> {
  const slices = Math.ceil(job.payload.ms / 100);
  for (let slice = 0; slice < slices; slice++) {
    try {
      await sleep(100, undefined, { signal });
    } catch {
      console.log(`${clock()} ${job.payload.task} of ${job.payload.file} interrupted at ${Math.round((100 * slice) / slices)}% (${(signal.reason as Error).name})`);
      throw signal.reason;
    }
  }
  return { file: job.payload.file };
}

function makeWorker(spool: SpoolClient, name: string, completions: Map<string, number>): Worker<Media> {
  const worker = new Worker<Media>(spool, { queue: QUEUE, concurrency: 4, metadata: { deployment: name } });
  worker.handle((job, ctx) => work(job, ctx.signal));
  worker.on('started', (job) => console.log(`${clock()} [${name}] started   ${job.payload.task} ${job.payload.file}`));
  worker.on('completed', (job) => {
    completions.set(job.id, (completions.get(job.id) ?? 0) + 1);
    console.log(`${clock()} [${name}] completed ${job.payload.task} ${job.payload.file}`);
  });
  return worker;
}

await runExample('graceful shutdown', async (spool) => {
  const jobs: Media[] = [
    { task: 'thumbnail', file: 'cat.jpg', ms: 800 },
    { task: 'thumbnail', file: 'dog.jpg', ms: 800 },
    { task: 'thumbnail', file: 'owl.jpg', ms: 800 },
    { task: 'transcode', file: 'holiday.mov', ms: 4_000 },
  ];
  const bulk = await spool.jobs.bulk<Media>({ queueName: QUEUE, jobs: jobs.map((payload) => ({ payload })) });
  const ids = bulk.succeeded.map((item) => item.jobId);
  check(ids.length === jobs.length, 'all jobs should be enqueued');
  const completions = new Map<string, number>();

  const worker = makeWorker(spool, 'v1', completions);
  let started = 0;
  const allStarted = new Promise<void>((resolve) => worker.on('started', () => ++started === jobs.length && resolve()));

  // The application's signal handling: first signal drains, a second one stops at once.
  let signals = 0;
  let stopped!: (result: StopResult) => void;
  const stoppedWith = new Promise<StopResult>((resolve) => (stopped = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals === 1) {
      console.log(`${clock()} ${signal}: no new jobs; running ones get ${GRACE_MS} ms to finish`);
      void worker.stop({ graceMs: GRACE_MS }).then(stopped);
    } else {
      console.log(`${clock()} ${signal} again: stopping now`);
      void worker.stop({ graceMs: 0 });
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  await worker.start();
  await allStarted;
  if (waitForRealSignal) {
    console.log(`waiting for SIGTERM: run \`kill ${process.pid}\` or press Ctrl-C (twice to skip the grace period)`);
  } else {
    console.log(`${clock()} all ${jobs.length} jobs running; sending ourselves SIGTERM, as a deployment would`);
    process.kill(process.pid, 'SIGTERM');
  }

  const { released } = await stoppedWith;
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  console.log(`${clock()} worker stopped; handed back to the queue: ${released.length ? released.join(', ') : 'nothing'}`);
  for (const id of released) {
    const job = await spool.jobs.get(id);
    console.log(`job ${id}: status ${job.status}, retries used ${job.retryCount}`);
    check(job.status === 'pending' && job.retryCount === 0, `a handed-back job should be pending with no retry used, is ${job.status} with ${job.retryCount}`);
  }

  // The next deployment picks up what the first one handed back.
  const remaining = ids.filter((id) => !completions.has(id));
  if (remaining.length > 0) {
    const next = makeWorker(spool, 'v2', completions);
    const done = new Promise<void>((resolve) => next.on('completed', () => remaining.every((id) => completions.has(id)) && resolve()));
    await next.start();
    await done;
    await next.stop();
  }

  const statuses = await spool.jobs.statuses(ids);
  check(statuses.length === ids.length && statuses.every((s) => s.status === 'completed'), `every job should be completed: ${statuses.map((s) => s.status).join(', ')}`);
  check(ids.every((id) => completions.get(id) === 1), 'every job should be completed exactly once');
  console.log(`all ${ids.length} jobs completed exactly once; nothing lost`);
});
