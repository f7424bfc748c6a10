/**
 * The worker runtime: registers, claims jobs with the long poll (from one
 * queue, or from several in one claim), runs the handler (of the job's
 * queue) with up to `concurrency` jobs at once, heartbeats their leases,
 * listens on the queue's realtime stream for cancellation of running jobs and
 * reports outcomes in batches. Stops in two phases. Installs no signal
 * handlers: the application decides when to call `stop()`.
 */
import { EventEmitter } from 'node:events';
import { hostname as osHostname } from 'node:os';
import { LIMITS, clamp } from '@spool/protocol';
import { sleep } from '../http.js';
import type { BatchItemResult, ClaimedJob, JobsResource } from '../resources/jobs.js';
import type { EventsResource } from '../resources/events.js';
import type { WorkersResource } from '../resources/queues.js';
import { CancelListener } from './cancel-listener.js';
import { describeError } from './errors.js';
import { Reporter, type Outcome } from './reporter.js';
import { RunningJob, type Ending, type Handler } from './running-job.js';

/** What the worker needs from a client; `SpoolClient` and the test kit's fake both fit. */
export interface WorkerClient {
  jobs: Pick<JobsResource, 'claim' | 'complete' | 'fail' | 'heartbeat' | 'completeMany' | 'failMany'>
    /** Optional (Spool extensions): without them `ctx.progress()` and `ctx.log()` do nothing, and `ctx.snooze()` throws (`ctx.dependencyResults()` rejects). */
    & Partial<Pick<JobsResource, 'progress' | 'appendLogs' | 'snooze' | 'dependencyResults'>>;
  workers: Pick<WorkersResource, 'register' | 'heartbeat' | 'deregister'>;
  /** Optional: without it, cancellation of running jobs is learned from heartbeats only. */
  events?: Pick<EventsResource, 'stream'>;
}

export interface WorkerOptions<P = unknown, R = unknown> extends WorkerSettings {
  /** The queue to work; its handler is given to `handle()`. Give this or `queues`. */
  queue?: string;
  /**
   * Spool extension, instead of `queue`: several queues (1…32), claimed
   * together: each claim takes the best jobs across them (higher priority
   * first, then older), and `concurrency` is shared by all of them. A map
   * gives each queue its handler (`{ emails: sendEmail, reports:
   * buildReport }`); a list takes one handler for all, from `handle()`.
   */
  queues?: Readonly<Record<string, Handler<P, R>>> | readonly string[];
}

/** Everything a worker is told besides its queues. */
export interface WorkerSettings {
  /** Jobs run at once (across all its queues). Default 5. */
  concurrency?: number;
  /** Lease per claim, 5…3600 s. Default 30. */
  leaseSeconds?: number;
  /** Heartbeat each job every `leaseSeconds × heartbeatFraction`. Default 1/3 (two beats may fail before the lease ends). */
  heartbeatFraction?: number;
  /** Long poll: how long the server may hold a claim open waiting for a job, 0…30000 ms. Default 10000. */
  waitMs?: number;
  /** Pause after an empty answer that came back early (servers without long poll); base of the error backoff. Default 1000. */
  pollIntervalMs?: number;
  /** Let outcomes wait this long to share a request. Default 0 (outcomes queue only while a request is in flight). */
  flushIntervalMs?: number;
  /** Most jobs per claim and per report request. Default 100. */
  maxBatch?: number;
  hostname?: string;
  workerType?: string;
  version?: string;
  metadata?: Record<string, unknown>;
  /** Longest error text sent on fail. Default 2048. */
  maxErrorLength?: number;
  /** Stack frames kept in the error text. Default 10. */
  stackFrames?: number;
  /**
   * Learn of cancellation of running jobs from the queue's realtime stream
   * (one Server-Sent Events connection per worker), so the handler's signal
   * fires within moments rather than at the next heartbeat. Default true.
   */
  cancelStream?: boolean;
}

export interface FailedInfo {
  /** From the server when it says; otherwise `retryable && retryCount < maxRetries`. */
  willRetry: boolean;
  retryable: boolean;
}

/** Listener arguments; jobs carry the worker's payload type `P`, results its result type `R`. */
export interface WorkerEvents<P = unknown, R = unknown> {
  started: [job: ClaimedJob<P>];
  completed: [job: ClaimedJob<P>, result: R];
  failed: [job: ClaimedJob<P>, error: unknown, info: FailedInfo];
  /** The handler called ctx.snooze(delaySecs) and the server took it (pending again, no attempt used). */
  snoozed: [job: ClaimedJob<P>, delaySecs: number];
  error: [error: unknown, job?: ClaimedJob<P>];
  stopped: [];
}

export interface StopOptions {
  /** How long running jobs may finish before they are aborted and handed back. Default 30000. */
  graceMs?: number;
}

export interface StopResult {
  /** Jobs aborted at the end of the grace period and handed back to the server. */
  released: string[];
}

export type WorkerState = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped';

const SDK_VERSION = '0.1.0';
const MAX_ERROR_BACKOFF_MS = 30_000;
const EARLY_CANCEL_TTL_MS = 60_000;
const EARLY_CANCEL_MAX = 1_000;
const MAX_CLAIMS_IN_FLIGHT = 4;
/** Queues one claim may name (the server's limit, LIMITS.claimQueuesMax). */
const MAX_QUEUES = LIMITS.claimQueuesMax;

function cleanHostname(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 255) || 'unknown';
}

export class Worker<P = unknown, R = unknown> extends EventEmitter<WorkerEvents<P, R>> {
  /** The queue it works; with several, the first of them. */
  readonly queue: string;
  /** Every queue it works, in the order given. */
  readonly queues: readonly string[];
  readonly #client: WorkerClient;
  readonly #options: Required<Omit<WorkerSettings, 'metadata'>> & { metadata: Record<string, unknown> };
  /** The handler for queues without their own (the one given to handle()). */
  #handler: Handler<P, R> | null = null;
  /** Handlers by queue, from a `queues` map. */
  readonly #handlers = new Map<string, Handler<P, R>>();
  #state: WorkerState = 'idle';
  #workerId: string | null = null;
  #reporter: Reporter | null = null;
  readonly #running = new Map<string, RunningJob>();
  /** Jobs aborted by a forced stop, handed back at deregistration. */
  readonly #released: ClaimedJob[] = [];
  #slotWaiters: (() => void)[] = [];
  #loop: Promise<void> | null = null;
  /** Slots promised to claims in flight: a claim asks only for what is free beyond them. */
  #reserved = 0;
  /** Claims (and report requests) in flight at once: one per batch of room, up to four. */
  readonly #claimsInFlight: number;
  readonly #claimAbort = new AbortController();
  #workerHeartbeat: NodeJS.Timeout | null = null;
  #starting: Promise<void> | null = null;
  #stopping: Promise<StopResult> | null = null;
  #forceStop: (() => void) | null = null;
  #cancelListener: CancelListener | null = null;
  /** Cancel requests that arrived before the claim answer did, by job id, with their arrival time. */
  readonly #earlyCancels = new Map<string, number>();

  constructor(client: WorkerClient, options: WorkerOptions<P, R>) {
    super();
    this.#client = client;
    if ((options.queue === undefined) === (options.queues === undefined)) {
      throw new TypeError('Worker: give either `queue` or `queues`');
    }
    if (options.queues === undefined) this.queues = [options.queue!];
    else if (isQueueList(options.queues)) this.queues = [...options.queues];
    else {
      for (const [queue, handler] of Object.entries(options.queues)) {
        if (typeof handler !== 'function') throw new TypeError(`Worker: the handler of queue "${queue}" is not a function`);
        this.#handlers.set(queue, handler);
      }
      this.queues = [...this.#handlers.keys()];
    }
    if (this.queues.length === 0 || this.queues.length > MAX_QUEUES) throw new TypeError(`Worker: \`queues\` must name 1 to ${MAX_QUEUES} queues`);
    if (new Set(this.queues).size !== this.queues.length) throw new TypeError('Worker: `queues` names a queue twice');
    this.queue = this.queues[0]!;
    this.#options = {
      concurrency: Math.max(1, Math.floor(options.concurrency ?? 5)),
      leaseSeconds: clamp(options.leaseSeconds ?? LIMITS.leaseSecondsDefault, LIMITS.leaseSecondsMin, LIMITS.leaseSecondsMax),
      heartbeatFraction: clamp(options.heartbeatFraction ?? 1 / 3, 0.05, 0.9),
      waitMs: clamp(options.waitMs ?? 10_000, 0, LIMITS.waitMsMax),
      pollIntervalMs: Math.max(10, options.pollIntervalMs ?? 1000),
      flushIntervalMs: Math.max(0, options.flushIntervalMs ?? 0),
      maxBatch: clamp(options.maxBatch ?? 100, 1, LIMITS.claimLimitMax),
      hostname: cleanHostname(options.hostname ?? osHostname()),
      workerType: options.workerType ?? 'nodejs',
      version: options.version ?? SDK_VERSION,
      metadata: options.metadata ?? {},
      maxErrorLength: options.maxErrorLength ?? 2048,
      stackFrames: options.stackFrames ?? 10,
      cancelStream: options.cancelStream ?? true,
    };
    this.#claimsInFlight = clamp(Math.ceil(this.#options.concurrency / this.#options.maxBatch), 1, MAX_CLAIMS_IN_FLIGHT);
  }

  /** The server's id for this worker, once started. */
  get workerId(): string | null {
    return this.#workerId;
  }

  get state(): WorkerState {
    return this.#state;
  }

  /** Jobs whose handler is running now. */
  get runningCount(): number {
    return this.#running.size;
  }

  /**
   * Sets the handler: its result completes the job, a throw fails it
   * (`NonRetryableError` → dead-letter queue), `ctx.snooze(s)` puts it off.
   * With a `queues` map, it serves the queues the map gives no handler.
   */
  handle(handler: Handler<P, R>): this {
    this.#handler = handler;
    return this;
  }

  /** Registers with the server and starts claiming. Rejects (and stays stopped) when registration fails. */
  start(): Promise<void> {
    const unhandled = this.queues.filter((queue) => !this.#handlers.has(queue));
    if (unhandled.length > 0 && !this.#handler) {
      return Promise.reject(new Error(`Worker.start(): call worker.handle(fn) first${this.queues.length > 1 ? ` (no handler for ${unhandled.join(', ')})` : ''}`));
    }
    if (this.#state !== 'idle') return Promise.reject(new Error(`Worker.start(): the worker is ${this.#state}`));
    this.#state = 'starting';
    this.#starting = this.#start();
    return this.#starting;
  }

  async #start(): Promise<void> {
    let registration;
    try {
      registration = await this.#client.workers.register({
        queueName: this.queue,
        ...(this.queues.length > 1 ? { queueNames: this.queues.slice(1) } : {}),
        hostname: this.#options.hostname,
        workerType: this.#options.workerType,
        maxConcurrency: this.#options.concurrency,
        metadata: this.#options.metadata,
        version: this.#options.version,
      });
    } catch (err) {
      this.#state = 'stopped';
      throw err;
    }
    this.#workerId = registration.id;
    this.#reporter = new Reporter(this.#client.jobs, {
      workerId: registration.id,
      flushIntervalMs: this.#options.flushIntervalMs,
      maxBatch: this.#options.maxBatch,
      // As many report requests in flight as claims.
      maxInFlight: this.#claimsInFlight,
      attempts: 4,
      retryForMs: this.#options.leaseSeconds * 1000,
      onReported: (outcome, answer) => this.#onReported(outcome, answer),
      onSettled: () => this.#wakeSlotWaiters(),
    });
    const heartbeatSecs = registration.heartbeatIntervalSecs > 0 ? registration.heartbeatIntervalSecs : 10;
    this.#workerHeartbeat = setInterval(() => void this.#sendWorkerHeartbeat('healthy'), heartbeatSecs * 1000);
    this.#state = 'running';
    if (this.#options.cancelStream && this.#client.events) {
      this.#cancelListener = new CancelListener(this.#client.events, {
        // Several queues: one stream of the organization's cancellations (a
        // queue-scoped key's carries only its queues), not one per queue.
        queue: this.queues.length === 1 ? this.queue : undefined,
        retryDelayMs: this.#options.pollIntervalMs,
        onCancel: (jobId, workerId) => this.#cancelRequested(jobId, workerId),
        onError: (err) => this.#emitError(err),
      });
      this.#cancelListener.start();
    }
    // One claim in flight per batch the worker has room for (up to four):
    // a worker with room for several batches keeps that many claims going,
    // so the server and the database work on one while the answer of
    // another travels; a worker with room for one batch claims as before.
    this.#loop = Promise.all(Array.from({ length: this.#claimsInFlight }, () => this.#claimLoop())).then(() => {});
  }

  /** A `job.cancel_requested` event: every worker of the queue hears it; the one running the job stops it. */
  #cancelRequested(jobId: string, workerId: string | null): void {
    const running = this.#running.get(jobId);
    if (running) {
      running.cancel();
      return;
    }
    if (workerId !== this.#workerId) return;
    // The stream can be faster than the claim answer: remember the request briefly.
    const now = Date.now();
    for (const [id, at] of this.#earlyCancels) if (now - at > EARLY_CANCEL_TTL_MS) this.#earlyCancels.delete(id);
    if (this.#earlyCancels.size < EARLY_CANCEL_MAX) this.#earlyCancels.set(jobId, now);
  }

  /**
   * Two-phase stop. Phase 1: stop claiming and let running jobs finish for up
   * to `graceMs`. Phase 2: abort what is left (its `ctx.signal` fires with a
   * `WorkerShutdownError`) and hand it back: deregistration returns the jobs
   * to pending, so they run elsewhere without using a retry. Outcomes are
   * flushed before deregistering. Calling again with a shorter grace (e.g. on
   * a second Ctrl-C) cuts the wait short.
   */
  stop(options: StopOptions = {}): Promise<StopResult> {
    const graceMs = Math.max(0, options.graceMs ?? 30_000);
    if (this.#stopping) {
      if (graceMs === 0) this.#forceStop?.();
      return this.#stopping;
    }
    if (this.#state === 'idle' || this.#state === 'stopped') {
      this.#state = 'stopped';
      return (this.#stopping = Promise.resolve({ released: [] }));
    }
    this.#stopping = this.#stop(graceMs);
    return this.#stopping;
  }

  async #stop(graceMs: number): Promise<StopResult> {
    // A stop during start waits for the registration, so that it can deregister.
    await this.#starting?.catch(() => {});
    if (this.#state === 'stopped') return { released: [] };
    this.#state = 'stopping';
    this.#claimAbort.abort(new Error('worker stopping'));
    void this.#sendWorkerHeartbeat('draining');
    const forced = new Promise<void>((resolve) => (this.#forceStop = resolve));
    const graceOver = new AbortController();
    await Promise.race([this.#allSettled(), sleep(graceMs, graceOver.signal).catch(() => {}), forced]);
    graceOver.abort();
    const released = [...this.#running.values()].map((running) => running.job.id);
    for (const running of [...this.#running.values()]) running.release();
    await this.#cancelListener?.stop();
    await this.#loop;
    await this.#reporter?.drain();
    if (this.#workerHeartbeat) clearInterval(this.#workerHeartbeat);
    await Promise.all(this.#heartbeatsInFlight);
    await this.#deregister();
    this.#state = 'stopped';
    this.emit('stopped');
    return { released };
  }

  async #deregister(): Promise<void> {
    try {
      await this.#client.workers.deregister(this.#workerId!);
    } catch (err) {
      this.#emitError(err);
      // Without deregistration nobody hands the aborted jobs back: fail them so they are retried.
      for (const job of this.#released) {
        this.#reporter!.add({ kind: 'fail', job, error: 'Worker shut down before the job finished', retryable: true });
      }
      await this.#reporter?.drain();
    }
  }

  async #allSettled(): Promise<void> {
    while (this.#running.size > 0) await this.#nextSlot();
  }

  #wakeSlotWaiters(): void {
    const waiters = this.#slotWaiters;
    this.#slotWaiters = [];
    for (const wake of waiters) wake();
  }

  #nextSlot(): Promise<void> {
    return new Promise((resolve) => this.#slotWaiters.push(resolve));
  }

  async #claimLoop(): Promise<void> {
    let errorDelay = this.#options.pollIntervalMs;
    while (this.#state === 'running') {
      // A job whose outcome is still unreported holds its lease too: beyond
      // one batch per report request in flight, they count against
      // concurrency, so claims cannot run ahead of reports (the server would
      // hold ever more processing jobs).
      const unreported = Math.max(0, (this.#reporter?.pending ?? 0) - this.#options.maxBatch * this.#claimsInFlight);
      const free = this.#options.concurrency - this.#running.size - this.#reserved - unreported;
      if (free <= 0) {
        await this.#nextSlot();
        continue;
      }
      const began = Date.now();
      const limit = Math.min(free, this.#options.maxBatch);
      let jobs: ClaimedJob[];
      this.#reserved += limit;
      try {
        jobs = await this.#client.jobs.claim(
          {
            ...(this.queues.length === 1 ? { queueName: this.queue } : { queueNames: [...this.queues] }),
            workerId: this.#workerId!,
            limit,
            leaseDurationSecs: this.#options.leaseSeconds,
            waitMs: this.#options.waitMs,
          },
          { signal: this.#claimAbort.signal },
        );
        errorDelay = this.#options.pollIntervalMs;
      } catch (err) {
        if (this.#state !== 'running') break;
        this.#emitError(err);
        await sleep(errorDelay, this.#claimAbort.signal).catch(() => {});
        errorDelay = Math.min(errorDelay * 2, MAX_ERROR_BACKOFF_MS);
        continue;
      } finally {
        this.#reserved -= limit;
        // Slots promised to this claim and not filled are free again.
        if (limit > 0) this.#wakeSlotWaiters();
      }
      // Jobs claimed after stop() began are not started; deregistration hands them back.
      if (this.#state !== 'running') break;
      for (const job of jobs) this.#run(job);
      const elapsed = Date.now() - began;
      if (jobs.length === 0 && elapsed < this.#options.pollIntervalMs) {
        await sleep(this.#options.pollIntervalMs - elapsed, this.#claimAbort.signal).catch(() => {});
      }
    }
  }

  #run(job: ClaimedJob): void {
    const running = new RunningJob(job, {
      workerId: this.#workerId!,
      leaseSeconds: this.#options.leaseSeconds,
      heartbeatEveryMs: this.#options.leaseSeconds * this.#options.heartbeatFraction * 1000,
      jobs: this.#client.jobs,
      reports: this.#reports,
      onEnd: (ended, ending) => this.#onEnd(ended, ending),
      onError: (err, failedJob) => this.#emitError(err, failedJob),
    });
    this.#running.set(job.id, running);
    this.emit('started', job as ClaimedJob<P>);
    running.start((this.#handlers.get(job.queueName) ?? this.#handler ?? unknownQueue) as Handler);
    if (this.#earlyCancels.delete(job.id)) running.cancel();
  }

  #onEnd(running: RunningJob, ending: Ending): void {
    const { job } = running;
    this.#running.delete(job.id);
    this.#wakeSlotWaiters();
    switch (ending.kind) {
      case 'complete':
        this.#reporter!.add({ kind: 'complete', job, result: ending.result });
        return;
      case 'fail': {
        const error = describeError(ending.error, this.#options.maxErrorLength, this.#options.stackFrames);
        this.#reporter!.add({ kind: 'fail', job, error, retryable: ending.retryable, cause: ending.error });
        return;
      }
      case 'snooze':
        this.#reporter!.add({ kind: 'snooze', job, delaySecs: ending.delaySecs });
        return;
      case 'lost':
        this.#emitError(ending.error, job);
        return;
      case 'released':
        this.#released.push(job);
        return;
      default: {
        const unreachable: never = ending;
        throw new Error(`unknown ending ${JSON.stringify(unreachable)}`);
      }
    }
  }

  #onReported(outcome: Outcome, answer: BatchItemResult): void {
    const { job } = outcome;
    if (!answer.success) {
      const verb = outcome.kind;
      this.#emitError(new Error(`Could not ${verb} job ${job.id}: ${answer.error ?? 'refused by the server'}`), job);
      return;
    }
    if (outcome.kind === 'complete') {
      this.emit('completed', job as ClaimedJob<P>, outcome.result as R);
      return;
    }
    if (outcome.kind === 'snooze') {
      this.emit('snoozed', job as ClaimedJob<P>, outcome.delaySecs);
      return;
    }
    const willRetry = answer.willRetry ?? (outcome.retryable && job.retryCount < job.maxRetries);
    this.emit('failed', job as ClaimedJob<P>, outcome.cause ?? new Error(outcome.error), { willRetry, retryable: outcome.retryable });
  }

  /** Heartbeats still on the wire; deregistration waits for them so a late one cannot revive the worker. */
  #heartbeatsInFlight = new Set<Promise<void>>();
  /** Whether the server has the progress and log endpoints (learned from the first answer that it has not). */
  #reports = { supported: true };

  #sendWorkerHeartbeat(status: 'healthy' | 'draining'): Promise<void> {
    const sent = this.#postWorkerHeartbeat(status).finally(() => this.#heartbeatsInFlight.delete(sent));
    this.#heartbeatsInFlight.add(sent);
    return sent;
  }

  async #postWorkerHeartbeat(status: 'healthy' | 'draining'): Promise<void> {
    if (!this.#workerId) return;
    try {
      await this.#client.workers.heartbeat(this.#workerId, { currentJobs: this.#running.size, status });
    } catch (err) {
      this.#emitError(err);
    }
  }

  /** Errors go to 'error' listeners; with none, to stderr (an unheard 'error' event would crash the process). */
  #emitError(err: unknown, job?: ClaimedJob): void {
    if (this.listenerCount('error') > 0) this.emit('error', err, job as ClaimedJob<P> | undefined);
    else console.warn(`spool worker (${this.queues.join(', ')}): ${err instanceof Error ? err.message : String(err)}`);
  }
}

function isQueueList(queues: Readonly<Record<string, unknown>> | readonly string[]): queues is readonly string[] {
  return Array.isArray(queues);
}

/** A job of a queue the worker has no handler for (a server that answered with another queue's job): fails it, to be retried. */
function unknownQueue(job: ClaimedJob): never {
  throw new Error(`spool worker: no handler for queue "${job.queueName}"`);
}
