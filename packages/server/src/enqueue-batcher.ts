import { jobInsertMany, type InsertedJob, type NewJob, type Queryable } from '@spool/engine';

export interface EnqueueBatcherOptions {
  /** Most jobs per INSERT. Default 500. */
  maxBatch?: number;
  /** How long a job may wait for company while another flush is running. Default 1 ms. */
  maxDelayMs?: number;
  /** Flushes (connections) running at once; later jobs queue up and share the next one. Default 2. */
  maxConcurrentFlushes?: number;
}

interface Pending {
  job: NewJob;
  resolve: (value: InsertedJob) => void;
  reject: (err: unknown) => void;
}

// Class 22 (data exception) and 23 (integrity violation): one bad row. Anything
// else (connection loss, shutdown) would fail the single inserts the same way.
function isRowError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/**
 * Group commit for single enqueues (DESIGN §7 S1, §8): concurrent
 * `POST /jobs` calls share one multi-row INSERT, one NOTIFY and one commit
 * instead of paying a commit (and the cluster-wide NOTIFY lock) each.
 *
 * When no flush is running, the jobs that arrived in the current event-loop
 * turn go at once (no added latency when idle). While flushes run, arrivals
 * gather for up to `maxDelayMs`, or until a flush slot frees up. Each caller
 * gets its own result; idempotency keys behave as if the calls ran one after
 * another in arrival order (the first gets `created: true`, a later one the
 * same id with `created: false`). If a batch fails because of one bad row,
 * its jobs are retried one by one so only the culprit's caller sees the error.
 */
export class EnqueueBatcher {
  readonly #db: Queryable;
  readonly #maxBatch: number;
  readonly #maxDelayMs: number;
  readonly #maxConcurrent: number;
  #pending: Pending[] = [];
  #timer: { kind: 'immediate'; handle: NodeJS.Immediate } | { kind: 'timeout'; handle: NodeJS.Timeout } | null = null;
  #inFlight = 0;
  #idle: (() => void)[] = [];
  /** For metrics and tests. */
  readonly counters = { flushes: 0, jobs: 0, fallbacks: 0 };

  constructor(db: Queryable, options: EnqueueBatcherOptions = {}) {
    this.#db = db;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#maxDelayMs = options.maxDelayMs ?? 1;
    this.#maxConcurrent = options.maxConcurrentFlushes ?? 2;
  }

  /** Inserts one job as part of the next shared INSERT. */
  enqueue(job: NewJob): Promise<InsertedJob> {
    return new Promise<InsertedJob>((resolve, reject) => {
      this.#pending.push({ job, resolve, reject });
      if (this.#pending.length >= this.#maxBatch && this.#inFlight < this.#maxConcurrent) this.#flush();
      else this.#schedule();
    });
  }

  /** Resolves once every job handed in so far has been written (or failed). */
  async drain(): Promise<void> {
    if (this.#pending.length > 0 && this.#inFlight < this.#maxConcurrent) this.#flush();
    if (this.#pending.length === 0 && this.#inFlight === 0) return;
    await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  #schedule(): void {
    if (this.#timer !== null || this.#inFlight >= this.#maxConcurrent) return;
    const fire = () => {
      this.#timer = null;
      this.#flush();
    };
    this.#timer = this.#inFlight === 0
      ? { kind: 'immediate', handle: setImmediate(fire) }
      : { kind: 'timeout', handle: setTimeout(fire, this.#maxDelayMs) };
  }

  #flush(): void {
    const timer = this.#timer;
    if (timer !== null) {
      if (timer.kind === 'immediate') clearImmediate(timer.handle);
      else clearTimeout(timer.handle);
      this.#timer = null;
    }
    const batch = this.#pending.splice(0, this.#maxBatch);
    if (batch.length === 0) return;
    this.#inFlight += 1;
    this.counters.flushes += 1;
    this.counters.jobs += batch.length;
    void this.#write(batch).finally(() => {
      this.#inFlight -= 1;
      if (this.#pending.length > 0) this.#flush();
      else if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    });
  }

  async #write(batch: Pending[]): Promise<void> {
    try {
      const results = await jobInsertMany(this.#db, batch.map((p) => p.job));
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      if (batch.length === 1 || !isRowError(err)) {
        for (const p of batch) p.reject(err);
        return;
      }
      this.counters.fallbacks += 1;
      for (const p of batch) {
        try {
          p.resolve((await jobInsertMany(this.#db, [p.job]))[0]!);
        } catch (single) {
          p.reject(single);
        }
      }
    }
  }
}
