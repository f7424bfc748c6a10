/**
 * One claimed job while its handler runs: the lease heartbeat, the timeout,
 * the abort signal and the single decision of how the job ends. Whatever
 * happens first (handler settles, timeout, cancel, lost lease, forced
 * shutdown) decides; everything after is ignored.
 */
import { ConflictError, NotFoundError, PayloadTooLargeError, ValidationError } from '../errors.js';
import type { ClaimedJob, DependencyResult, Json, JobsResource, ProgressParams } from '../resources/jobs.js';
import { LIMITS } from '@spool/protocol';
import { JobCancelledError, JobSnoozedError, JobTimeoutError, LeaseLostError, WorkerShutdownError, isRetryable } from './errors.js';
import { startJobSpan, type JobSpan } from '../tracing.js';

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
  /**
   * Spool extension: reports progress (percent 0..100, a message up to 1,000
   * characters, JSON metadata up to 16 KiB), shown on the dashboard's job page
   * and sent as the realtime event `job.progress`. An omitted argument keeps
   * the last value, null clears it. Bad values reject with ValidationError;
   * a lost lease with LeaseLostError; other failures only reach the worker's
   * `error` event. A no-op on servers without the endpoint.
   */
  progress(percent?: number | null, message?: string | null, metadata?: Json | null): Promise<void>;
  /**
   * Spool extension: adds lines to the job's log (one line per argument,
   * strings split at newlines, other values as JSON, each cut at 4,096
   * characters). Sent in batches (every 200 ms or 50 lines) and before the
   * job is completed or failed. The server keeps the newest 1,000 lines
   * (256 KiB) per job.
   */
  log(...lines: unknown[]): void;
  /**
   * Spool extension: "not now, try again in `seconds`" (a whole number,
   * 1..86400) without using an attempt: the job goes back to pending and is
   * claimed again after the delay, with the same `attempt`. Decides how this
   * run ends: `ctx.signal` aborts with a JobSnoozedError, and the call throws
   * it so the handler stops (`return ctx.snooze(30)` reads well); whatever the
   * handler returns or throws afterwards is ignored. When it settles, its log
   * lines are sent and the worker reports the snooze instead of complete or
   * fail. A cancel requested meanwhile ends the job cancelled instead. A bad
   * `seconds` throws a RangeError (and decides nothing).
   */
  snooze(seconds: number): never;
  /**
   * Spool extension: how this job's dependencies ended, each with its
   * `status`, `result`, `error` (when it did not complete) and workflow
   * `key`, in the order they were added; one request per call. A job that
   * runs after a failed dependency (its edge says `on_parent_failure:
   * "continue"`) learns here how it failed. Dependencies of queues the
   * worker's key may not use are left out; at most 100 (see
   * `client.jobs.dependencyResults` for more).
   */
  dependencyResults<R = Json>(): Promise<DependencyResult<R>[]>;
}

export type Handler<P = unknown, R = unknown> = (job: ClaimedJob<P>, ctx: JobContext) => Promise<R> | R;

/** How a job ended, from the worker's point of view. */
export type Ending =
  | { kind: 'complete'; result: unknown }
  | { kind: 'fail'; error: unknown; retryable: boolean }
  /** The handler called ctx.snooze(delaySecs). */
  | { kind: 'snooze'; delaySecs: number }
  /** Not reported: the lease is gone, or the worker hands the job back at deregistration. */
  | { kind: 'lost'; error: unknown }
  | { kind: 'released' };

export interface RunningJobOptions {
  workerId: string;
  leaseSeconds: number;
  heartbeatEveryMs: number;
  jobs: Pick<JobsResource, 'heartbeat'> & Partial<Pick<JobsResource, 'progress' | 'appendLogs' | 'snooze' | 'dependencyResults'>>;
  /** Shared by a worker's jobs: false once the server answered that it has no progress/log endpoints. */
  reports?: { supported: boolean };
  onEnd(job: RunningJob, ending: Ending): void;
  onError(err: unknown, job: ClaimedJob): void;
}

/** Log lines wait at most this long, or until this many are buffered, before they are sent. */
export const LOG_FLUSH_MS = 200;
export const LOG_BATCH_LINES = 50;
const LOG_REQUEST_LINES = 100;
const LOG_LINE_CHARS = 4096;

function logLines(values: unknown[]): string[] {
  const out: string[] = [];
  for (const value of values) {
    let text: string;
    if (typeof value === 'string') text = value;
    else if (value instanceof Error) text = value.stack ?? `${value.name}: ${value.message}`;
    else {
      try {
        text = JSON.stringify(value) ?? String(value);
      } catch {
        text = String(value);
      }
    }
    for (const line of text.split(/\r?\n/)) out.push(line.length > LOG_LINE_CHARS ? line.slice(0, LOG_LINE_CHARS) : line);
  }
  return out;
}

/**
 * The fenced answers of docs/compatibility.md §3.4 (a job no longer ours: 404 with
 * `error: job_not_found_or_not_owned`; a stale lease: 409 LEASE_EXPIRED).
 * Any other 404 to a report is a server without the endpoint (an older
 * Spool, or another implementation of the contract).
 */
function leaseRefusal(err: unknown): boolean {
  if (err instanceof NotFoundError) return (err.body as { error?: unknown } | null | undefined)?.error === 'job_not_found_or_not_owned';
  return err instanceof ConflictError && err.code === 'LEASE_EXPIRED';
}

/**
 * A refusal because the attempt outlived its server-enforced timeout (Spool
 * extension: `details.timed_out` on the 409 LEASE_EXPIRED or the 404).
 */
function timedOutRefusal(err: unknown): boolean {
  if (!(err instanceof ConflictError || err instanceof NotFoundError)) return false;
  const details = err.details as { timed_out?: unknown } | null | undefined;
  return details !== null && typeof details === 'object' && details.timed_out === true;
}

function missingEndpoint(err: unknown): boolean {
  return err instanceof NotFoundError && !leaseRefusal(err);
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
  #logBuffer: string[] = [];
  #logTimer: NodeJS.Timeout | null = null;
  // Sends run one after another so the job's lines arrive in order.
  #logChain: Promise<void> = Promise.resolve();
  #span: JobSpan | null = null;
  /** Set by ctx.snooze: the delay to report once the handler settles. */
  #snoozeSecs: number | null = null;

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
        // A timeout the server enforces has passed there first (its deadline
        // counts from the claim, before this job reached us): the server
        // fails the job, and a report of ours would be refused.
        if (this.job.timeoutEnforced === true) {
          this.#timedOutOnServer(undefined);
          return;
        }
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
      progress: (percent, message, metadata) => this.#progress(percent, message, metadata),
      log: (...lines) => this.#log(lines),
      snooze: (seconds) => this.#snooze(seconds),
      dependencyResults: <R = Json>() => {
        const read = this.#options.jobs.dependencyResults;
        if (!read) return Promise.reject(new Error('ctx.dependencyResults(): this client has no jobs.dependencyResults'));
        return read.call(this.#options.jobs, this.job.id) as Promise<DependencyResult<R>[]>;
      },
    };
    // The handler runs in its own span (tracing.ts), whatever ends it.
    const span = (this.#span = startJobSpan(this.job, this.#options.workerId));
    // Lines logged by the handler are sent before its outcome is reported.
    Promise.resolve()
      .then(() => span.run(() => handler(this.job, ctx)))
      .then(
        async (result) => {
          await this.#flushLogs();
          if (this.#snoozeSecs !== null) this.#end({ kind: 'snooze', delaySecs: this.#snoozeSecs });
          else this.#end({ kind: 'complete', result });
        },
        async (error: unknown) => {
          await this.#flushLogs();
          if (this.#snoozeSecs !== null) this.#end({ kind: 'snooze', delaySecs: this.#snoozeSecs });
          else this.#end({ kind: 'fail', error, retryable: isRetryable(error) });
        },
      );
  }

  /** ctx.snooze: the first call decides; the handler's signal aborts at once, the report waits for it to settle. */
  #snooze(seconds: number): never {
    if (!Number.isInteger(seconds) || seconds < LIMITS.snoozeSecondsMin || seconds > LIMITS.snoozeSecondsMax) {
      throw new RangeError(`ctx.snooze(seconds): a whole number of seconds from ${LIMITS.snoozeSecondsMin} to ${LIMITS.snoozeSecondsMax}, got ${String(seconds)}`);
    }
    if (!this.#options.jobs.snooze) throw new Error('ctx.snooze(): this client has no jobs.snooze');
    if (this.#snoozeSecs !== null) throw new JobSnoozedError(this.#snoozeSecs);
    const reason = new JobSnoozedError(seconds);
    if (this.#ended) throw reason;
    this.#snoozeSecs = seconds;
    if (!this.#abortReason) {
      this.#abortReason = { reason };
      this.#controller?.abort(reason);
    }
    throw reason;
  }

  /** Someone cancelled the running job: aborts the handler; the job is failed without retry (the server ends it cancelled). */
  cancel(): void {
    const reason = new JobCancelledError();
    this.#end({ kind: 'fail', error: reason, retryable: false }, reason);
  }

  /**
   * The server ended the attempt at its enforced deadline and fails the job
   * itself (retrying it per the queue's policy): the handler's signal aborts
   * with a JobTimeoutError, and nothing is reported (it would be refused).
   */
  #timedOutOnServer(cause: unknown): JobTimeoutError {
    const reason = new JobTimeoutError(this.job.timeoutSeconds ?? 0, { cause, enforcedByServer: true });
    this.#end({ kind: 'lost', error: reason }, reason);
    return reason;
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
    // A timeout or cancel still sends what was logged; a lost or released job's lines would be refused.
    if (ending.kind === 'fail') void this.#flushLogs();
    else {
      if (this.#logTimer) clearTimeout(this.#logTimer);
      this.#logTimer = null;
      this.#logBuffer = [];
    }
    if (abortReason !== undefined) {
      this.#abortReason = { reason: abortReason };
      this.#controller?.abort(abortReason);
    }
    if (ending.kind === 'complete') this.#span?.end({});
    else if (ending.kind === 'fail') this.#span?.end({ error: ending.error, retryable: ending.retryable });
    else if (ending.kind === 'snooze') this.#span?.end({});
    else this.#span?.end({ error: ending.kind === 'lost' ? ending.error : abortReason });
    this.#options.onEnd(this, ending);
  }

  #signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#abortReason) this.#controller.abort(this.#abortReason.reason);
    }
    return this.#controller.signal;
  }

  #reportsOff(): boolean {
    return !this.#options.jobs.progress || !this.#options.jobs.appendLogs || this.#options.reports?.supported === false;
  }

  /**
   * A refused report: a stale lease or a job no longer ours ends the job
   * like a refused heartbeat; a server without the endpoint turns reports
   * off for the worker; anything else goes to the worker's `error` event.
   * Returns the LeaseLostError when the job was lost.
   */
  #reportRefused(err: unknown): LeaseLostError | null {
    if (missingEndpoint(err)) {
      if (this.#options.reports) this.#options.reports.supported = false;
      return null;
    }
    if (leaseRefusal(err)) {
      const reason = new LeaseLostError(undefined, { cause: err });
      this.#end({ kind: 'lost', error: reason }, reason);
      return reason;
    }
    this.#options.onError(err, this.job);
    return null;
  }

  async #progress(percent: number | null | undefined, message: string | null | undefined, metadata: Json | null | undefined): Promise<void> {
    if (this.#ended || this.#reportsOff()) return;
    const params: ProgressParams = { workerId: this.#options.workerId, leaseId: this.job.leaseId ?? undefined };
    if (percent !== undefined) params.percent = percent;
    if (message !== undefined) params.message = message;
    if (metadata !== undefined) params.metadata = metadata;
    try {
      await this.#options.jobs.progress!(this.job.id, params);
    } catch (err) {
      // The handler's own mistake (percent 150, a huge message): tell it.
      if (err instanceof ValidationError || err instanceof PayloadTooLargeError) throw err;
      if (this.#ended) return;
      const lost = this.#reportRefused(err);
      if (lost) throw lost;
    }
  }

  #log(values: unknown[]): void {
    if (this.#ended || this.#reportsOff()) return;
    this.#logBuffer.push(...logLines(values));
    if (this.#logBuffer.length >= LOG_BATCH_LINES) void this.#flushLogs();
    else this.#logTimer ??= setTimeout(() => void this.#flushLogs(), LOG_FLUSH_MS);
  }

  /** Sends the buffered lines; never rejects. */
  #flushLogs(): Promise<void> {
    if (this.#logTimer) clearTimeout(this.#logTimer);
    this.#logTimer = null;
    const lines = this.#logBuffer;
    if (lines.length === 0) return this.#logChain;
    this.#logBuffer = [];
    this.#logChain = this.#logChain.then(() => this.#sendLogs(lines));
    return this.#logChain;
  }

  async #sendLogs(lines: string[]): Promise<void> {
    const { workerId } = this.#options;
    for (let i = 0; i < lines.length; i += LOG_REQUEST_LINES) {
      if (this.#reportsOff()) return;
      try {
        await this.#options.jobs.appendLogs!(this.job.id, { workerId, leaseId: this.job.leaseId ?? undefined, lines: lines.slice(i, i + LOG_REQUEST_LINES) });
      } catch (err) {
        // After the job ended (a timeout's fail reported first) a refusal is expected.
        if (!this.#ended || !leaseRefusal(err)) this.#reportRefused(err);
        return;
      }
    }
  }

  async #beat(fromHandler = false): Promise<void> {
    if (this.#ended) return;
    const { workerId, leaseSeconds } = this.#options;
    try {
      const answer = await this.#options.jobs.heartbeat(this.job.id, { workerId, leaseDurationSecs: leaseSeconds, leaseId: this.job.leaseId ?? undefined });
      if (answer?.timedOut) this.#timedOutOnServer(undefined);
      else if (answer?.cancelRequested) this.cancel();
    } catch (err) {
      if (timedOutRefusal(err)) {
        const reason = this.#timedOutOnServer(err);
        if (fromHandler) throw reason;
        return;
      }
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
