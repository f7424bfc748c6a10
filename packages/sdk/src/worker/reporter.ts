/**
 * Reports outcomes (complete/fail, and snoozes one by one) in batches. While `maxInFlight` requests
 * of a kind are in flight (one by default) the next outcomes queue up and go
 * together when one returns (group commit): one job alone is reported at
 * once, a busy worker sends big batches. Servers without the batch
 * endpoints (404/405) get one request per job from then on.
 */
import { SpoolApiError, SpoolNetworkError, SpoolTimeoutError } from '../errors.js';
import { sleep } from '../http.js';
import type { BatchItemResult, ClaimedJob, JobsResource } from '../resources/jobs.js';

export type ReporterJobs = Pick<JobsResource, 'complete' | 'fail' | 'completeMany' | 'failMany'> & Partial<Pick<JobsResource, 'snooze'>>;

export interface CompleteOutcome {
  kind: 'complete';
  job: ClaimedJob;
  result: unknown;
}

export interface FailOutcome {
  kind: 'fail';
  job: ClaimedJob;
  error: string;
  retryable: boolean;
  /** What the handler threw, for the worker's 'failed' event; not sent. */
  cause?: unknown;
}

/** The handler called ctx.snooze: sent one request per job (there is no batch endpoint). */
export interface SnoozeOutcome {
  kind: 'snooze';
  job: ClaimedJob;
  delaySecs: number;
}

export type Outcome = CompleteOutcome | FailOutcome | SnoozeOutcome;

export interface ReporterOptions {
  workerId: string;
  /** Linger this long before sending, to grow batches. Default 0 (send on the next turn). */
  flushIntervalMs: number;
  maxBatch: number;
  /** Requests of one kind in flight at once. Default 1. */
  maxInFlight?: number;
  /** Attempts for a batch that got no answer or a 5xx. */
  attempts: number;
  /**
   * Keep retrying such a batch for this long after its first attempt, even
   * past `attempts`: the worker passes its lease duration, so an outcome
   * outlives a server or database restart shorter than the lease instead of
   * being dropped and run again after the lease expires. Default 0.
   */
  retryForMs?: number;
  onReported(outcome: Outcome, answer: BatchItemResult): void;
  /** A request ended (answered or given up on): `pending` went down. */
  onSettled?(): void;
}

interface Lane {
  kind: Outcome['kind'];
  queue: Outcome[];
  inFlight: Set<Promise<void>>;
  /** Cancels the pending delayed send, if any. */
  cancelTimer: (() => void) | null;
  batchSupported: boolean;
}

function transient(err: unknown): boolean {
  return err instanceof SpoolNetworkError || err instanceof SpoolTimeoutError || (err instanceof SpoolApiError && err.status >= 500);
}

/** A whole-request 404/405 from a batch endpoint means the server does not have it. */
function routeMissing(err: unknown): boolean {
  return err instanceof SpoolApiError && (err.status === 404 || err.status === 405);
}

export class Reporter {
  readonly #jobs: ReporterJobs;
  readonly #options: ReporterOptions;
  readonly #lanes: Record<Outcome['kind'], Lane> = {
    complete: { kind: 'complete', queue: [], inFlight: new Set(), cancelTimer: null, batchSupported: true },
    fail: { kind: 'fail', queue: [], inFlight: new Set(), cancelTimer: null, batchSupported: true },
    snooze: { kind: 'snooze', queue: [], inFlight: new Set(), cancelTimer: null, batchSupported: false },
  };

  constructor(jobs: ReporterJobs, options: ReporterOptions) {
    this.#jobs = jobs;
    this.#options = options;
  }

  /** Outcomes in requests that have not answered yet. */
  #sending = 0;

  /** Outcomes not yet reported: queued or in a request that has not answered. */
  get pending(): number {
    return this.#lanes.complete.queue.length + this.#lanes.fail.queue.length + this.#lanes.snooze.queue.length + this.#sending;
  }

  /** Queues an outcome for reporting. */
  add(outcome: Outcome): void {
    const lane = this.#lanes[outcome.kind];
    lane.queue.push(outcome);
    this.#schedule(lane);
  }

  /** Resolves when everything queued so far has been reported (or given up on). */
  async drain(): Promise<void> {
    for (;;) {
      const lanes = Object.values(this.#lanes);
      const busy = lanes.filter((lane) => lane.inFlight.size > 0 || lane.queue.length > 0);
      if (busy.length === 0) return;
      for (const lane of busy) while (lane.queue.length > 0 && this.#hasRoom(lane)) this.#send(lane);
      await Promise.all(busy.flatMap((lane) => [...lane.inFlight]));
    }
  }

  #hasRoom(lane: Lane): boolean {
    return lane.inFlight.size < (this.#options.maxInFlight ?? 1);
  }

  #schedule(lane: Lane): void {
    while (this.#hasRoom(lane) && lane.queue.length >= this.#options.maxBatch) this.#send(lane);
    // Without room, picked up when a request returns.
    if (!this.#hasRoom(lane) || lane.queue.length === 0 || lane.cancelTimer) return;
    const delay = this.#options.flushIntervalMs;
    const fire = () => {
      lane.cancelTimer = null;
      if (this.#hasRoom(lane) && lane.queue.length > 0) this.#send(lane);
    };
    if (delay > 0) {
      const timer = setTimeout(fire, delay);
      lane.cancelTimer = () => clearTimeout(timer);
    } else {
      // setImmediate lets outcomes that settle in the same turn share a request.
      const immediate = setImmediate(fire);
      lane.cancelTimer = () => clearImmediate(immediate);
    }
  }

  #send(lane: Lane): void {
    lane.cancelTimer?.();
    lane.cancelTimer = null;
    const batch = lane.queue.splice(0, this.#options.maxBatch);
    this.#sending += batch.length;
    const request: Promise<void> = this.#deliver(lane, batch).finally(() => {
      this.#sending -= batch.length;
      lane.inFlight.delete(request);
      this.#options.onSettled?.();
      if (lane.queue.length > 0) this.#schedule(lane);
    });
    lane.inFlight.add(request);
  }

  async #deliver(lane: Lane, batch: Outcome[]): Promise<void> {
    let answers: BatchItemResult[];
    try {
      answers = lane.batchSupported ? await this.#withRetries(() => this.#sendBatch(lane.kind, batch)) : await this.#sendEach(batch);
    } catch (err) {
      if (lane.batchSupported && routeMissing(err)) {
        lane.batchSupported = false;
        return this.#deliver(lane, batch);
      }
      const message = err instanceof Error ? err.message : String(err);
      answers = batch.map((outcome) => ({ jobId: outcome.job.id, success: false, error: message }));
    }
    const byId = new Map(answers.map((answer) => [answer.jobId, answer]));
    for (const outcome of batch) {
      const answer = byId.get(outcome.job.id) ?? { jobId: outcome.job.id, success: false, error: 'No answer for this job in the batch response' };
      this.#options.onReported(outcome, answer);
    }
  }

  async #withRetries<T>(send: () => Promise<T>): Promise<T> {
    const giveUpAt = Date.now() + (this.#options.retryForMs ?? 0);
    for (let attempt = 1; ; attempt++) {
      try {
        return await send();
      } catch (err) {
        if (!transient(err) || (attempt >= this.#options.attempts && Date.now() >= giveUpAt)) throw err;
        await sleep(Math.min(100 * 2 ** attempt, 1000));
      }
    }
  }

  async #sendBatch(kind: Outcome['kind'], batch: Outcome[]): Promise<BatchItemResult[]> {
    const workerId = this.#options.workerId;
    if (kind === 'complete') {
      const items = batch.map((o) => ({ jobId: o.job.id, leaseId: o.job.leaseId ?? undefined, result: (o as CompleteOutcome).result }));
      return (await this.#jobs.completeMany({ workerId, items })).results;
    }
    if (kind === 'snooze') throw new Error('snoozes have no batch endpoint');
    const items = batch.map((o) => {
      const fail = o as FailOutcome;
      return { jobId: o.job.id, leaseId: o.job.leaseId ?? undefined, error: fail.error, retryable: fail.retryable };
    });
    return (await this.#jobs.failMany({ workerId, items })).results;
  }

  /** Per-job fallback; each job is retried on its own, and one refused job does not fail the others. */
  #sendEach(batch: Outcome[]): Promise<BatchItemResult[]> {
    const workerId = this.#options.workerId;
    return Promise.all(
      batch.map(async (outcome): Promise<BatchItemResult> => {
        const { job } = outcome;
        const leaseId = job.leaseId ?? undefined;
        try {
          if (outcome.kind === 'complete') {
            await this.#withRetries(() => this.#jobs.complete(job.id, { workerId, leaseId, result: outcome.result }));
            return { jobId: job.id, success: true };
          }
          if (outcome.kind === 'snooze') {
            const snooze = this.#jobs.snooze;
            if (!snooze) return { jobId: job.id, success: false, error: 'this client has no jobs.snooze' };
            await this.#withRetries(() => snooze.call(this.#jobs, job.id, { workerId, leaseId, delaySecs: outcome.delaySecs }));
            return { jobId: job.id, success: true };
          }
          const answer = await this.#withRetries(() => this.#jobs.fail(job.id, { workerId, leaseId, error: outcome.error, retryable: outcome.retryable }));
          return { jobId: job.id, success: true, willRetry: answer?.willRetry };
        } catch (err) {
          return { jobId: job.id, success: false, error: err instanceof Error ? err.message : String(err) };
        }
      }),
    );
  }
}
