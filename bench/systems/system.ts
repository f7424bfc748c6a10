import type { WorkerGroup } from '../lib/children.js';
import { nowMs } from '../lib/http.js';

/** Sizes of one run (full or --quick). */
export interface Sizes {
  singleJobs: number;
  singleCallers: number;
  bulkJobs: number;
  bulkBatch: number;
  drainJobs: number;
  latencyRate: number;
  latencySeconds: number;
  retainedFinished: number;
  /** S8: future-scheduled jobs waiting in the drained queue. */
  scheduledJobs: number;
}

/** What each system under test implements; every method measures one scenario. */
export interface BenchSystem {
  readonly name: string;
  /** Version string for the report. */
  version(): Promise<string>;
  /** How it was configured, one line for the report. */
  readonly configuration: string;
  setup(): Promise<void>;
  /** Empties the system's tables (between scenarios). */
  reset(): Promise<void>;
  /** S1: `jobs` single enqueues from `callers` concurrent callers; jobs/s. */
  enqueueSingle(jobs: number, callers: number): Promise<number>;
  /** S2: `jobs` enqueued in batches of `batch`; jobs/s. Leaves the jobs for drain(). */
  enqueueBulk(jobs: number, batch: number): Promise<number>;
  /** Loads `jobs` for a drain (untimed; the system's fastest bulk path). */
  preload(jobs: number, batch: number): Promise<void>;
  /** S3: drains `jobs` already enqueued with `workers` worker processes; jobs/s. */
  drain(jobs: number, workers: number): Promise<number>;
  /** S4: enqueue-to-start latencies (ms) at `rate` jobs/s for `seconds`, one idle worker process. */
  latency(rate: number, seconds: number): Promise<number[]>;
  teardown(): Promise<void>;
}

/** A queue system with scheduled jobs, worker concurrency and a database to hold a transaction on: S8 and S9. */
export interface QueueSystem extends BenchSystem {
  /**
   * S8's fixture (untimed): `jobs` jobs in the drained queue, due `aheadS`
   * seconds from now or later (spread over the following day), loaded through
   * the system's bulk path, then VACUUM ANALYZEd like a table that has held
   * them for a while. The drain's end probe ignores them.
   */
  preloadScheduled(jobs: number, batch: number, aheadS: number): Promise<void>;
  /** S9: worker processes running `concurrency` jobs at once in total, started and consuming. */
  steadyWorkers(concurrency: number, processes: number): Promise<WorkerGroup>;
  /** S9: one single enqueue whose payload carries `t`, the enqueue stamp (nowMs()). */
  enqueueStamped(t: number): Promise<void>;
  /** S9: another session of the system's database opens a transaction with an xid and a snapshot and sits idle. */
  holdXmin(): Promise<{ end(): Promise<void> }>;
}

export function isQueueSystem(sys: BenchSystem): sys is QueueSystem {
  return 'steadyWorkers' in sys;
}

/** Due times for S8: `aheadS` from now, then one a second, wrapping after a day. */
export function futureDue(i: number, aheadS: number, from = Date.now()): Date {
  return new Date(from + (aheadS + (i % 86_400)) * 1000);
}

/** Runs `callers` loops that together call `fn` `jobs` times; returns calls per second. */
export async function concurrentCalls(jobs: number, callers: number, fn: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: callers }, async () => {
    while (next < jobs) await fn(next++);
  }));
  return jobs / ((performance.now() - started) / 1000);
}

/** Calls `fn` at `rate` per second for `seconds` (open loop: a slow call does not delay the next). */
export async function paced(rate: number, seconds: number, fn: () => Promise<void>): Promise<void> {
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const start = nowMs();
  const inflight: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + i * interval;
    const wait = due - nowMs();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    // Caught at once: a call failing while later ones are still being paced
    // must fail the scenario, not crash the process as an unhandled rejection.
    inflight.push(fn().then(() => null, (err: unknown) => err));
  }
  const failure = (await Promise.all(inflight)).find((outcome) => outcome !== null);
  if (failure !== undefined) throw failure;
}

/** Polls `probe` every 10 ms until it returns true (bounded). */
export async function until(probe: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
