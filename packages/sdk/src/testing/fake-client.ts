/**
 * The test kit's client: an in-memory stand-in for `SpoolClient` (jobs,
 * dead-letter queue, workers) with assertions on what was enqueued and a
 * way to run a queue's jobs inline through a handler. It also satisfies
 * `WorkerClient`, so a real `Worker` can run against it.
 */
import { AssertionError } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import type { SpoolClient } from '../client.js';
import { createApiError } from '../errors.js';
import type { Job } from '../resources/jobs.js';
import type { RegisterWorkerParams, RegisterWorkerResult, WorkerHeartbeatParams, WorkerInfo, WorkerSummary, WorkersResource } from '../resources/queues.js';
import { JobSnoozedError, describeError, isRetryable } from '../worker/errors.js';
import type { Handler, JobContext } from '../worker/running-job.js';
import type { WorkerClient } from '../worker/worker.js';
import { FakeDlq, FakeJobs } from './fake-jobs.js';
import { matches } from './match.js';

/** `client.events` of `asClient()`: a server without realtime streams. */
const notSimulatedEvents = {
  async *stream(): AsyncGenerator<never> {
    throw createApiError({ status: 404, code: 'NOT_FOUND', message: 'FakeSpoolClient: client.events.stream() is not simulated' });
  },
};

export type WorkersApi = Pick<WorkersResource, keyof WorkersResource>;

/** What to look for among enqueued jobs; `payload` and `tags` match partially (extra keys are fine). */
export interface JobMatch {
  queueName?: string;
  payload?: unknown;
  priority?: number;
  tags?: Record<string, unknown>;
  idempotencyKey?: string;
  status?: Job['status'];
}

export interface RunJobsOptions {
  /** Stop after this many handler calls (guards against handlers that enqueue forever). Default 1000. */
  maxRuns?: number;
}

export interface RunJobsResult {
  /** Handler calls made. */
  runs: number;
  completed: Job[];
  /** Jobs that ended in the dead-letter queue. */
  deadlettered: Job[];
  /** Failures that were retried (each retry runs again within the same call). */
  retried: number;
  /** Runs that called ctx.snooze (the job waits until the client's `now` passes its delay). */
  snoozed: number;
}

class FakeWorkers implements WorkersApi {
  readonly registered = new Map<string, WorkerInfo>();
  readonly #jobs: FakeJobs;
  readonly #now: () => Date;

  constructor(jobs: FakeJobs, now: () => Date) {
    this.#jobs = jobs;
    this.#now = now;
  }

  #find(id: string): WorkerInfo {
    const worker = this.registered.get(id);
    if (!worker) throw createApiError({ status: 404, code: 'NOT_FOUND', message: `Worker ${id} not found` });
    return worker;
  }

  async list(): Promise<WorkerSummary[]> {
    return [...this.registered.values()].map(({ id, queueName, hostname, status, currentJobs, maxConcurrency, lastHeartbeat }) => ({
      id, queueName, hostname, status, currentJobs, maxConcurrency, lastHeartbeat,
    }));
  }

  async get(id: string): Promise<WorkerInfo> {
    return { ...this.#find(id) };
  }

  async register(params: RegisterWorkerParams): Promise<RegisterWorkerResult> {
    const now = this.#now().toISOString();
    const id = randomUUID();
    this.registered.set(id, {
      id,
      organizationId: 'fake-org',
      queueName: params.queueName,
      hostname: params.hostname,
      status: 'healthy',
      currentJobs: 0,
      maxConcurrency: params.maxConcurrency ?? 5,
      lastHeartbeat: now,
      workerType: params.workerType ?? null,
      metadata: params.metadata ?? {},
      version: params.version ?? null,
      registeredAt: now,
      updatedAt: now,
    });
    return { id, queueName: params.queueName, leaseDurationSecs: 30, heartbeatIntervalSecs: 10 };
  }

  async heartbeat(id: string, params: WorkerHeartbeatParams): Promise<void> {
    const worker = this.#find(id);
    Object.assign(worker, { currentJobs: params.currentJobs, status: params.status ?? 'healthy', lastHeartbeat: this.#now().toISOString() });
  }

  async deregister(id: string): Promise<void> {
    this.#find(id).status = 'offline';
    this.#jobs.releaseWorker(id);
  }
}

/**
 * ```ts
 * const spool = new FakeSpoolClient();
 * await signUp(spool, 'a@example.com');            // code under test calls spool.jobs.create(...)
 * spool.assertEnqueued({ queueName: 'emails', payload: { to: 'a@example.com' } });
 * await spool.runJobs('emails', sendEmail);         // runs them inline
 * ```
 */
export class FakeSpoolClient implements WorkerClient {
  readonly baseUrl = 'fake://spool';
  readonly jobs: FakeJobs;
  readonly dlq: FakeDlq;
  readonly workers: FakeWorkers;
  #clock: () => Date;

  constructor(options: { now?: () => Date } = {}) {
    this.#clock = options.now ?? (() => new Date());
    const now = () => this.#clock();
    this.jobs = new FakeJobs(now);
    this.dlq = new FakeDlq(this.jobs);
    this.workers = new FakeWorkers(this.jobs, now);
  }

  /** Jobs enqueued so far (all statuses), oldest first, optionally filtered. */
  enqueued(match: JobMatch = {}): Job[] {
    return this.jobs.all.filter((job) => matchesJob(job, match));
  }

  /** Throws an AssertionError listing what was enqueued unless a job matches (exactly `count` of them, when given). */
  assertEnqueued(match: JobMatch, count?: number): Job[] {
    const found = this.enqueued(match);
    const ok = count === undefined ? found.length > 0 : found.length === count;
    if (!ok) {
      const wanted = count === undefined ? 'a job' : `${count} job(s)`;
      throw new AssertionError({ message: `Expected ${wanted} matching ${inspect(match, { depth: 6 })}, found ${found.length}.\n${this.#describe()}` });
    }
    return found;
  }

  /** Throws an AssertionError when any job matches. */
  assertNotEnqueued(match: JobMatch): void {
    const found = this.enqueued(match);
    if (found.length > 0) throw new AssertionError({ message: `Expected no job matching ${inspect(match, { depth: 6 })}, found ${found.length}.\n${this.#describe()}` });
  }

  /**
   * This fake typed as a full `SpoolClient`, for code that asks for one:
   * jobs, dlq and workers are simulated; any other resource method throws
   * "not simulated" when called. The event stream answers like a server
   * without one (404), so a `Worker` given this client falls back to
   * heartbeats, where `requestCancel()` is simulated.
   */
  asClient(): SpoolClient {
    const simulated: Record<string, unknown> = { baseUrl: this.baseUrl, jobs: this.jobs, dlq: this.dlq, workers: this.workers, events: notSimulatedEvents };
    return new Proxy(simulated, {
      get(target, resource: string) {
        if (resource in target) return target[resource];
        return new Proxy({}, {
          get(_t, method: string) {
            return () => Promise.reject(new Error(`FakeSpoolClient: client.${resource}.${method}() is not simulated`));
          },
        });
      },
    }) as unknown as SpoolClient;
  }

  /** Forgets every job and worker. */
  reset(): void {
    this.jobs.all.length = 0;
    this.workers.registered.clear();
  }

  /** Makes the next heartbeat of the running job answer `cancelRequested: true`. */
  requestCancel(jobId: string): void {
    this.jobs.requestCancel(jobId);
  }

  /**
   * Runs the queue's due jobs inline, one at a time in claim order, until
   * none is due: a result completes the job, a throw fails it (retried at
   * once while retries are left; `NonRetryableError` dead-letters it). Jobs
   * the handler enqueues on the same queue run too.
   */
  async runJobs<P = unknown, R = unknown>(queueName: string, handler: Handler<P, R>, options: RunJobsOptions = {}): Promise<RunJobsResult> {
    const maxRuns = options.maxRuns ?? 1000;
    const outcome: RunJobsResult = { runs: 0, completed: [], deadlettered: [], retried: 0, snoozed: 0 };
    const workerId = 'inline-runner';
    while (outcome.runs < maxRuns) {
      const [claimed] = await this.jobs.claim<P>({ queueName, workerId, limit: 1 });
      if (!claimed) break;
      outcome.runs += 1;
      const controller = new AbortController();
      let snoozeSecs: number | null = null;
      const ctx: JobContext = {
        leaseId: claimed.leaseId,
        signal: controller.signal,
        workerId,
        attempt: claimed.retryCount + 1,
        heartbeat: async () => {},
        progress: async (percent, message, metadata) => {
          await this.jobs.progress(claimed.id, { workerId, leaseId: claimed.leaseId, percent, message, metadata });
        },
        // Inline: each line is kept at once (no batching to wait for).
        log: (...lines) => {
          const text = lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l) ?? String(l)));
          this.jobs.appendLogs(claimed.id, { workerId, leaseId: claimed.leaseId, lines: text.flatMap((t) => t.split(/\r?\n/)) }).catch(() => {});
        },
        snooze: (seconds) => {
          if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400) throw new RangeError(`ctx.snooze(seconds): a whole number of seconds from 1 to 86400, got ${String(seconds)}`);
          snoozeSecs ??= seconds;
          const reason = new JobSnoozedError(snoozeSecs);
          if (!controller.signal.aborted) controller.abort(reason);
          throw reason;
        },
        dependencyResults: <R>() => this.jobs.dependencyResults<R>(claimed.id),
      };
      // A snoozed job waits for the client's clock (the `now` option) like any scheduled one.
      const snoozed = () => (snoozeSecs !== null ? this.jobs.snooze(claimed.id, { workerId, leaseId: claimed.leaseId, delaySecs: snoozeSecs }) : null);
      try {
        const result = await handler(claimed, ctx);
        if (await snoozed()) {
          outcome.snoozed += 1;
          continue;
        }
        await this.jobs.complete(claimed.id, { workerId, leaseId: claimed.leaseId, result });
        outcome.completed.push(this.jobs.find(claimed.id));
      } catch (err) {
        if (await snoozed()) {
          outcome.snoozed += 1;
          continue;
        }
        const answer = await this.jobs.fail(claimed.id, { workerId, leaseId: claimed.leaseId, error: describeError(err), retryable: isRetryable(err) });
        if (answer.willRetry) outcome.retried += 1;
        else if (this.jobs.find(claimed.id).status === 'deadletter') outcome.deadlettered.push(this.jobs.find(claimed.id));
      }
    }
    return outcome;
  }

  #describe(): string {
    if (this.jobs.all.length === 0) return 'Nothing was enqueued.';
    const lines = this.jobs.all.map((job) => `  - ${job.queueName} [${job.status}] ${inspect(job.payload, { depth: 4, breakLength: Infinity })}`);
    return `Enqueued:\n${lines.join('\n')}`;
  }
}

function matchesJob(job: Job, match: JobMatch): boolean {
  return (
    (match.queueName === undefined || job.queueName === match.queueName) &&
    (match.payload === undefined || matches(job.payload, match.payload)) &&
    (match.priority === undefined || job.priority === match.priority) &&
    (match.tags === undefined || matches(job.tags, match.tags)) &&
    (match.idempotencyKey === undefined || job.idempotencyKey === match.idempotencyKey) &&
    (match.status === undefined || job.status === match.status)
  );
}
