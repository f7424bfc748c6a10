/**
 * One claimed job while its handler runs: the lease heartbeat, the timeout,
 * the abort signal and the single decision of how the job ends. Whatever
 * happens first (handler settles, timeout, cancel, lost lease, forced
 * shutdown) decides; everything after is ignored.
 */
import { ConflictError, NotFoundError } from '../errors.js';
import type { ClaimedJob, JobsResource } from '../resources/jobs.js';
import { JobCancelledError, JobTimeoutError, LeaseLostError, WorkerShutdownError, isRetryable } from './errors.js';

/** What a handler receives besides the job. */
export interface JobContext {
  /** Fencing token of this claim: pass it along to side effects that must not happen twice. */
  readonly leaseId: string | null;
  /** Fires on timeout, on cancellation of the running job (heartbeat answer or realtime stream) and on forced shutdown; `signal.reason` says which. */
  readonly signal: AbortSignal;
  readonly workerId: string;
  /** 1 on the first run, 2 on the first retry, … */
  readonly attempt: number;
  /** Extends the lease now (heartbeats also run on their own). */
  heartbeat(): Promise<void>;
}

export type Handler<P = unknown, R = unknown> = (job: ClaimedJob<P>, ctx: JobContext) => Promise<R> | R;

/** How a job ended, from the worker's point of view. */
export type Ending =
  | { kind: 'complete'; result: unknown }
  | { kind: 'fail'; error: unknown; retryable: boolean }
  /** Not reported: the lease is gone, or the worker hands the job back at deregistration. */
  | { kind: 'lost'; error: unknown }
  | { kind: 'released' };

export interface RunningJobOptions {
  workerId: string;
  leaseSeconds: number;
  heartbeatEveryMs: number;
  jobs: Pick<JobsResource, 'heartbeat'>;
  onEnd(job: RunningJob, ending: Ending): void;
  onError(err: unknown, job: ClaimedJob): void;
}

export class RunningJob {
  readonly job: ClaimedJob;
  readonly startedAt = Date.now();
  readonly #options: RunningJobOptions;
  // Made when the handler first reads ctx.signal: most handlers never do, and
  // an AbortController per job was a measurable share of a worker's CPU.
  #controller: AbortController | null = null;
  #abortReason: { reason: unknown } | null = null;
  #ended = false;
  #heartbeatTimer: NodeJS.Timeout | null = null;
  #timeoutTimer: NodeJS.Timeout | null = null;

  constructor(job: ClaimedJob, options: RunningJobOptions) {
    this.job = job;
    this.#options = options;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Starts the handler and the timers. */
  start(handler: Handler): void {
    this.#heartbeatTimer = setInterval(() => void this.#beat(), this.#options.heartbeatEveryMs);
    const timeoutSeconds = this.job.timeoutSeconds;
    if (typeof timeoutSeconds === 'number' && timeoutSeconds > 0) {
      this.#timeoutTimer = setTimeout(() => {
        const reason = new JobTimeoutError(timeoutSeconds);
        this.#end({ kind: 'fail', error: reason, retryable: true }, reason);
      }, timeoutSeconds * 1000);
    }
    const running = this;
    const ctx: JobContext = {
      leaseId: this.job.leaseId ?? null,
      get signal() {
        return running.#signal();
      },
      workerId: this.#options.workerId,
      attempt: (this.job.retryCount ?? 0) + 1,
      heartbeat: () => this.#beat(true),
    };
    Promise.resolve()
      .then(() => handler(this.job, ctx))
      .then(
        (result) => this.#end({ kind: 'complete', result }),
        (error: unknown) => this.#end({ kind: 'fail', error, retryable: isRetryable(error) }),
      );
  }

  /** Someone cancelled the running job: aborts the handler; the job is failed without retry (the server ends it cancelled). */
  cancel(): void {
    const reason = new JobCancelledError();
    this.#end({ kind: 'fail', error: reason, retryable: false }, reason);
  }

  /** Forced shutdown: aborts the handler and hands the job back (released at deregistration). */
  release(): void {
    this.#end({ kind: 'released' }, new WorkerShutdownError());
  }

  #end(ending: Ending, abortReason?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#heartbeatTimer) clearInterval(this.#heartbeatTimer);
    if (this.#timeoutTimer) clearTimeout(this.#timeoutTimer);
    if (abortReason !== undefined) {
      this.#abortReason = { reason: abortReason };
      this.#controller?.abort(abortReason);
    }
    this.#options.onEnd(this, ending);
  }

  #signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#abortReason) this.#controller.abort(this.#abortReason.reason);
    }
    return this.#controller.signal;
  }

  async #beat(fromHandler = false): Promise<void> {
    if (this.#ended) return;
    const { workerId, leaseSeconds } = this.#options;
    try {
      const answer = await this.#options.jobs.heartbeat(this.job.id, { workerId, leaseDurationSecs: leaseSeconds, leaseId: this.job.leaseId ?? undefined });
      if (answer?.cancelRequested) this.cancel();
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) {
        const reason = new LeaseLostError(undefined, { cause: err });
        this.#end({ kind: 'lost', error: reason }, reason);
        if (fromHandler) throw reason;
        return;
      }
      if (fromHandler) throw err;
      this.#options.onError(err, this.job);
    }
  }
}
