/**
 * In-memory jobs with the server's rules (idempotency keys, claim order,
 * leases, retries into the dead-letter queue), so code written against
 * `client.jobs` runs unchanged in a user's unit tests. No timers: scheduled
 * and backed-off jobs are due when `now()` reaches them.
 */
import { randomUUID } from 'node:crypto';
import type { JobStatus } from '@spool/protocol';
import { createApiError } from '../errors.js';
import type {
  AddDependenciesResult,
  JobHistoryEntry,
  BatchResult,
  BulkEnqueueParams,
  BulkEnqueueResult,
  ClaimParams,
  ClaimedJob,
  CompleteManyParams,
  CompleteParams,
  CreateJobParams,
  CreateJobResult,
  DependencyResult,
  FailManyParams,
  FailParams,
  FailResult,
  HeartbeatParams,
  HeartbeatResult,
  SnoozeParams,
  SnoozeResult,
  AppendLogsParams,
  AppendLogsResult,
  Job,
  JobLogLine,
  JobProgress,
  ProgressParams,
  JobDependencies,
  JobExplainReason,
  JobExplanation,
  JobStats,
  JobStatusInfo,
  JobSummary,
  JobsResource,
  Json,
  ListDlqParams,
  ListJobsParams,
  PurgeDlqParams,
  DlqResource,
  RetryDlqParams,
  SetPriorityResult,
  UpdateJobParams,
} from '../resources/jobs.js';
import type { CreateDlqReplayParams, DlqReplay, DlqReplaysResource, ListDlqReplaysParams, WaitForDlqReplayOptions } from '../resources/dlq-replays.js';

export type JobsApi = Pick<JobsResource, keyof JobsResource>;
export type DlqApi = Pick<DlqResource, keyof DlqResource>;
export type DlqReplaysApi = Pick<DlqReplaysResource, keyof DlqReplaysResource>;

function refuse(status: number, code: string, message: string): never {
  throw createApiError({ status, code, message });
}

function iso(value: Date | string | undefined, fallback: string | null = null): string | null {
  if (value === undefined) return fallback;
  return new Date(value).toISOString();
}

function clone<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

function summary(job: Job): JobSummary {
  const { id, queueName, status, priority, retryCount, createdAt, scheduledAt, startedAt, completedAt } = job;
  return { id, queueName, status, priority, retryCount, createdAt, scheduledAt, startedAt, completedAt };
}

export class FakeJobs implements JobsApi {
  /** Every job ever created, in creation order. */
  readonly all: Job[] = [];
  readonly #cancelRequested = new Set<string>();
  readonly #progress = new Map<string, JobProgress>();
  readonly #logs = new Map<string, JobLogLine[]>();
  #logSeq = 0;
  readonly #now: () => Date;
  readonly #organizationId = 'fake-org';

  constructor(now: () => Date) {
    this.#now = now;
  }

  /** The job or a 404, like the server. */
  find(id: string): Job {
    return this.all.find((job) => job.id === id) ?? refuse(404, 'NOT_FOUND', `Job ${id} not found`);
  }

  /** Makes the next heartbeat of a running job answer `cancelRequested: true`. */
  requestCancel(id: string): void {
    this.#cancelRequested.add(this.find(id).id);
  }

  async create<P = Json>(params: CreateJobParams<P>): Promise<CreateJobResult> {
    if (!params.queueName) refuse(400, 'VALIDATION_ERROR', 'queue_name is required');
    if (params.idempotencyKey !== undefined) {
      const existing = this.all.find((job) => job.idempotencyKey === params.idempotencyKey);
      if (existing) return params.jobKey ? { id: existing.id, created: false, keyOutcome: 'deduplicated' } : { id: existing.id, created: false };
    }
    const now = this.#now().toISOString();
    let scheduledAt = iso(params.scheduledAt);
    const policy = params.jobKey;
    if (policy) {
      // The server's rules (docs/jobs-api.md, "Job keys"), one enqueue at a time.
      const ofKey = this.all.filter((job) => job.queueName === params.queueName && job.jobKey === policy.key);
      const waiting = ofKey.filter((job) => (job.status === 'pending' || job.status === 'scheduled') && job.startedAt === null).at(-1);
      const active = waiting ?? ofKey.filter((job) => job.status === 'pending' || job.status === 'scheduled' || job.status === 'processing').at(-1);
      const nowMs = Date.parse(now);
      if (policy.mode === 'dedupe' && active) return { id: active.id, created: false, keyOutcome: 'deduplicated' };
      if (policy.mode === 'throttle') {
        const recent = ofKey.filter((job) => Date.parse(job.createdAt) > nowMs - policy.windowSecs * 1000).at(-1);
        if (recent) return { id: recent.id, created: false, keyOutcome: 'throttled' };
      }
      if (policy.mode === 'debounce') {
        const cap = (from: number) => (policy.maxWaitSecs === undefined ? Infinity : from + policy.maxWaitSecs * 1000);
        if (waiting) {
          const runAt = new Date(Math.min(nowMs + policy.windowSecs * 1000, cap(Date.parse(waiting.createdAt)))).toISOString();
          Object.assign(waiting, { payload: clone(params.payload), scheduledAt: runAt, status: runAt > now ? 'scheduled' : 'pending', jobKeyMode: 'debounce', updatedAt: now });
          return { id: waiting.id, created: false, keyOutcome: 'debounced' };
        }
        scheduledAt = new Date(nowMs + policy.windowSecs * 1000).toISOString();
      }
      if (policy.mode === 'replace') {
        if (waiting) {
          Object.assign(waiting, {
            payload: clone(params.payload), priority: params.priority ?? 0, maxRetries: params.maxRetries ?? 3,
            timeoutSeconds: params.timeoutSeconds ?? 300, scheduledAt, expiresAt: iso(params.expiresAt), tags: clone(params.tags) ?? null,
            status: scheduledAt !== null && scheduledAt > now ? 'scheduled' : 'pending', jobKeyMode: 'replace', updatedAt: now,
          });
          return { id: waiting.id, created: false, keyOutcome: 'replaced' };
        }
        // A running job of the key: the server queues the new job after it; the fake does not model dependencies.
      }
    }
    const job: Job = {
      id: randomUUID(),
      organizationId: this.#organizationId,
      queueName: params.queueName,
      status: scheduledAt !== null && scheduledAt > now ? 'scheduled' : 'pending',
      payload: clone(params.payload),
      result: null,
      retryCount: 0,
      maxRetries: params.maxRetries ?? 3,
      lastError: null,
      createdAt: now,
      scheduledAt,
      startedAt: null,
      completedAt: null,
      expiresAt: iso(params.expiresAt),
      priority: params.priority ?? 0,
      tags: clone(params.tags) ?? null,
      timeoutSeconds: params.timeoutSeconds ?? 300,
      parentJobId: params.parentJobId ?? null,
      completionWebhook: params.completionWebhook ?? null,
      assignedWorkerId: null,
      leaseId: null,
      leaseExpiresAt: null,
      idempotencyKey: params.idempotencyKey ?? null,
      updatedAt: now,
      workflowId: null,
      dependencyMode: null,
      dependenciesMet: null,
      jobKey: policy?.key ?? null,
      jobKeyMode: policy?.mode ?? null,
    };
    this.all.push(job);
    return policy ? { id: job.id, created: true, keyOutcome: 'created' } : { id: job.id, created: true };
  }

  async list(params: ListJobsParams = {}): Promise<JobSummary[]> {
    const rows = this.all.filter(
      (job) =>
        (params.queueName === undefined || job.queueName === params.queueName) &&
        (params.status === undefined || job.status === params.status) &&
        (params.tag === undefined || (job.tags !== null && params.tag in job.tags)),
    );
    const offset = params.offset ?? 0;
    return rows.reverse().slice(offset, offset + (params.limit ?? 50)).map(summary);
  }

  async get<P = Json, R = Json>(id: string): Promise<Job<P, R>> {
    return clone(this.find(id)) as Job<P, R>;
  }

  async cancel(id: string): Promise<'cancelled' | 'cancel_requested'> {
    const job = this.find(id);
    if (job.status === 'processing') {
      this.#cancelRequested.add(job.id);
      return 'cancel_requested';
    }
    if (job.status !== 'pending' && job.status !== 'scheduled') refuse(409, 'CONFLICT', `Job ${id} is ${job.status}`);
    this.#set(job, 'cancelled');
    return 'cancelled';
  }

  async retry<P = Json>(id: string): Promise<Job<P>> {
    const job = this.find(id);
    if (job.status !== 'failed' && job.status !== 'deadletter') refuse(409, 'CONFLICT', `Job ${id} is ${job.status}`);
    this.#set(job, 'pending', { retryCount: job.retryCount + 1, lastError: null, scheduledAt: null });
    return clone(job) as Job<P>;
  }

  async update<P = Json>(id: string, params: UpdateJobParams<P>): Promise<Job<P>> {
    const job = this.find(id);
    const given = Object.entries(params).filter(([, value]) => value !== undefined);
    if (given.length === 0) refuse(400, 'VALIDATION_ERROR', 'Send at least one of payload, priority, queue_name, max_retries, tags, scheduled_at');
    const waiting = job.status === 'pending' || job.status === 'scheduled';
    if (!waiting && job.status !== 'deadletter' && job.status !== 'failed') {
      refuse(409, 'CONFLICT', `Job is ${job.status}: only pending, scheduled or dead-lettered jobs can be edited`);
    }
    if (params.scheduledAt !== undefined && !waiting) refuse(409, 'CONFLICT', `Job is ${job.status}: scheduled_at applies to pending or scheduled jobs`);
    if (params.maxRetries !== undefined && waiting && params.maxRetries < job.retryCount) {
      refuse(400, 'VALIDATION_ERROR', `max_retries ${params.maxRetries} is below the job's retry_count ${job.retryCount}`);
    }
    const changes: Partial<Job> = {};
    if (params.payload !== undefined) changes.payload = clone(params.payload);
    if (params.priority !== undefined) changes.priority = params.priority;
    if (params.queueName !== undefined) changes.queueName = params.queueName;
    if (params.maxRetries !== undefined) changes.maxRetries = params.maxRetries;
    if (params.tags !== undefined) changes.tags = clone(params.tags);
    let status = job.status;
    if (params.scheduledAt !== undefined) {
      changes.scheduledAt = params.scheduledAt === null ? null : iso(params.scheduledAt);
      status = changes.scheduledAt !== null && changes.scheduledAt > this.#now().toISOString() ? 'scheduled' : 'pending';
    }
    this.#set(job, status, changes);
    return clone(job) as Job<P>;
  }

  async setPriority(id: string, priority: number): Promise<SetPriorityResult> {
    const job = this.find(id);
    if (job.status !== 'pending' && job.status !== 'scheduled') refuse(404, 'NOT_FOUND', `Job ${id} is not pending`);
    const oldPriority = job.priority;
    job.priority = priority;
    return { jobId: id, oldPriority, newPriority: priority };
  }

  async stats(): Promise<JobStats> {
    const stats: JobStats = { pending: 0, scheduled: 0, processing: 0, completed: 0, failed: 0, deadletter: 0, cancelled: 0, total: 0 };
    for (const job of this.all) {
      stats[job.status] += 1;
      stats.total += 1;
    }
    return stats;
  }

  async statuses(ids: string[]): Promise<JobStatusInfo[]> {
    return this.all
      .filter((job) => ids.includes(job.id))
      .map(({ id, status, queueName, retryCount, createdAt, completedAt }) => ({ id, status, queueName, retryCount, createdAt, completedAt }));
  }

  async bulk<P = Json>(params: BulkEnqueueParams<P>): Promise<BulkEnqueueResult> {
    const succeeded: BulkEnqueueResult['succeeded'] = [];
    for (const [index, item] of params.jobs.entries()) {
      const { id, created } = await this.create({
        queueName: params.queueName,
        payload: item.payload,
        priority: item.priority ?? params.defaultPriority,
        maxRetries: params.defaultMaxRetries,
        timeoutSeconds: params.defaultTimeoutSeconds,
        idempotencyKey: item.idempotencyKey,
        scheduledAt: item.scheduledAt,
      });
      succeeded.push({ index, jobId: id, created });
    }
    return { succeeded, failed: [], total: params.jobs.length, successCount: succeeded.length, failureCount: 0 };
  }

  async getDependencies(id: string): Promise<JobDependencies> {
    const job = this.find(id);
    return { jobId: id, status: job.status, dependenciesMet: true, dependencies: [], dependents: [] };
  }

  /**
   * The server's explanation for what the fake simulates: schedules,
   * expiry, leases, finished states and the place in line (no queue config,
   * workers or dependencies, so none of their reasons).
   */
  async explain(id: string): Promise<JobExplanation> {
    const job = this.find(id);
    const now = this.#now().toISOString();
    const reasons: JobExplainReason[] = [];
    const add = (code: JobExplainReason['code'], blocking: boolean, message: string, extra: Partial<JobExplainReason> = {}) => reasons.push({ code, message, blocking, ...extra });
    switch (job.status) {
      case 'completed': add('finished', true, 'It completed: there is nothing left to run.', { completedAt: job.completedAt }); break;
      case 'deadletter': add('dead_lettered', true, `It was dead-lettered (last error: ${job.lastError}). Retry it with POST /api/v1/jobs/${id}/retry.`, { lastError: job.lastError }); break;
      case 'failed': add('failed', true, `It failed for good (last error: ${job.lastError}). Retry it with POST /api/v1/jobs/${id}/retry.`, { lastError: job.lastError }); break;
      case 'cancelled': add('cancelled', true, 'It was cancelled and will not run.'); break;
      case 'processing': add('leased', true, `It is running on worker "${job.assignedWorkerId}".`, { until: job.leaseExpiresAt!, workerId: job.assignedWorkerId }); break;
      default:
        if (job.expiresAt !== null && job.expiresAt <= now) add('expired', true, `Its expires_at (${job.expiresAt}) passed before a worker started it.`, { expiresAt: job.expiresAt });
        if (job.scheduledAt !== null && job.scheduledAt > now) add('scheduled', true, `It is scheduled for ${job.scheduledAt}.`, { until: job.scheduledAt });
    }
    const due = this.due(job.queueName);
    const runnable = reasons.length === 0 && due.includes(job);
    if (runnable) {
      const ahead = due.indexOf(job);
      add('queued_behind', false, ahead === 0 ? 'It can be claimed now and is next in line.' : `It can be claimed now; ${ahead} jobs are ahead of it.`, { queueName: job.queueName, ahead, aheadCapped: false });
    }
    return { jobId: id, queueName: job.queueName, status: job.status, runnable, reasons, checkedAt: now };
  }

  /** The fake has no dependencies: an existing job's list is empty. */
  async dependencyResults<R = Json>(id: string): Promise<DependencyResult<R>[]> {
    this.find(id);
    return [];
  }

  async addDependencies(): Promise<AddDependenciesResult> {
    throw new Error('FakeSpoolClient: job dependencies are not simulated');
  }

  async history(): Promise<JobHistoryEntry[]> {
    throw new Error('FakeSpoolClient: job history is not simulated');
  }

  /** Due jobs of the queue (or of any of the queues) in claim order: priority, then age. */
  due(queueName: string | readonly string[]): Job[] {
    const now = this.#now().toISOString();
    const queues = new Set(typeof queueName === 'string' ? [queueName] : queueName);
    return this.all
      .filter((job) => queues.has(job.queueName) && (job.status === 'pending' || job.status === 'scheduled'))
      .filter((job) => job.scheduledAt === null || job.scheduledAt <= now)
      .filter((job) => job.expiresAt === null || job.expiresAt > now)
      .sort((a, b) => b.priority - a.priority || a.createdAt.localeCompare(b.createdAt));
  }

  async claim<P = Json>(params: ClaimParams): Promise<ClaimedJob<P>[]> {
    const leaseMs = (params.leaseDurationSecs ?? 30) * 1000;
    const claimed = this.due(params.queueNames ?? params.queueName).slice(0, params.limit ?? 1);
    for (const job of claimed) {
      this.#set(job, 'processing', {
        assignedWorkerId: params.workerId,
        leaseId: randomUUID(),
        leaseExpiresAt: new Date(this.#now().getTime() + leaseMs).toISOString(),
        startedAt: job.startedAt ?? this.#now().toISOString(),
      });
    }
    return claimed.map((job) => clone(job) as unknown as ClaimedJob<P>);
  }

  #owned(id: string, workerId: string, leaseId: string | null | undefined): Job {
    const job = this.all.find((candidate) => candidate.id === id);
    if (!job || job.status !== 'processing' || job.assignedWorkerId !== workerId) {
      throw createApiError({ status: 404, code: 'NOT_FOUND', message: 'job_not_found_or_not_owned', body: { success: false, error: 'job_not_found_or_not_owned' } });
    }
    if (leaseId && job.leaseId !== leaseId) refuse(409, 'LEASE_EXPIRED', 'Lease expired');
    return job;
  }

  async complete(id: string, params: CompleteParams): Promise<{ success: boolean }> {
    const job = this.#owned(id, params.workerId, params.leaseId);
    this.#set(job, 'completed', { result: clone(params.result) ?? null, completedAt: this.#now().toISOString(), ...this.#noLease() });
    return { success: true };
  }

  async fail(id: string, params: FailParams): Promise<FailResult> {
    const job = this.#owned(id, params.workerId, params.leaseId);
    const cancelled = this.#cancelRequested.delete(id);
    if (cancelled) {
      this.#set(job, 'cancelled', { lastError: params.error, ...this.#noLease() });
      return { success: true, willRetry: false };
    }
    if (params.retryable !== false && job.retryCount < job.maxRetries) {
      // No backoff in the fake: a retry is due at once, so tests need no clock.
      this.#set(job, 'pending', { retryCount: job.retryCount + 1, lastError: params.error, ...this.#noLease() });
      return { success: true, willRetry: true };
    }
    this.#set(job, 'deadletter', { lastError: params.error, ...this.#noLease() });
    return { success: true, willRetry: false };
  }

  /** Like the server: pending again at now + delaySecs (the fake's clock), retryCount unchanged; after a cancel request, cancelled. */
  async snooze(id: string, params: SnoozeParams): Promise<SnoozeResult> {
    if (!Number.isInteger(params.delaySecs) || params.delaySecs < 1 || params.delaySecs > 86_400) refuse(400, 'VALIDATION_ERROR', 'body/delay_secs must be an integer from 1 to 86400');
    const job = this.#owned(id, params.workerId, params.leaseId);
    if (this.#cancelRequested.delete(id)) {
      this.#set(job, 'cancelled', this.#noLease());
      return { success: true, status: 'cancelled', scheduledAt: null, retryCount: job.retryCount };
    }
    const scheduledAt = new Date(this.#now().getTime() + params.delaySecs * 1000).toISOString();
    this.#set(job, 'pending', { scheduledAt, ...this.#noLease() });
    return { success: true, status: 'pending', scheduledAt, retryCount: job.retryCount };
  }

  async heartbeat(id: string, params: HeartbeatParams): Promise<HeartbeatResult> {
    const job = this.#owned(id, params.workerId, params.leaseId);
    job.leaseExpiresAt = new Date(this.#now().getTime() + params.leaseDurationSecs * 1000).toISOString();
    return { success: true, cancelRequested: this.#cancelRequested.has(id), leaseExpiresAt: job.leaseExpiresAt };
  }

  async progress(id: string, params: ProgressParams): Promise<{ success: boolean; progress: JobProgress }> {
    const job = this.#owned(id, params.workerId, params.leaseId);
    if (params.percent != null && !(params.percent >= 0 && params.percent <= 100)) refuse(400, 'VALIDATION_ERROR', 'body/percent must be <= 100 and >= 0');
    const last = this.#progress.get(job.id);
    const next: JobProgress = {
      percent: params.percent !== undefined ? params.percent : (last?.percent ?? null),
      message: params.message !== undefined ? params.message : (last?.message ?? null),
      metadata: params.metadata !== undefined ? clone(params.metadata) : (last?.metadata ?? null),
      updatedAt: this.#now().toISOString(),
    };
    this.#progress.set(job.id, next);
    return { success: true, progress: clone(next) };
  }

  /** Keeps the newest 1,000 lines per job, like the server (its 256 KiB bound is not simulated). */
  async appendLogs(id: string, params: AppendLogsParams): Promise<AppendLogsResult> {
    const job = this.#owned(id, params.workerId, params.leaseId);
    const lines = this.#logs.get(job.id) ?? [];
    const at = this.#now().toISOString();
    for (const line of params.lines) lines.push({ seq: ++this.#logSeq, at, line });
    const dropped = Math.max(0, lines.length - 1000);
    lines.splice(0, dropped);
    this.#logs.set(job.id, lines);
    return { success: true, written: params.lines.length, dropped };
  }

  async getProgress(id: string): Promise<JobProgress | null> {
    return clone(this.#progress.get(this.find(id).id) ?? null);
  }

  async logs(id: string, params: { after?: number; limit?: number } = {}): Promise<JobLogLine[]> {
    const lines = this.#logs.get(this.find(id).id) ?? [];
    return clone(lines.filter((l) => l.seq > (params.after ?? 0)).slice(0, params.limit ?? 1000));
  }

  async completeMany(params: CompleteManyParams): Promise<BatchResult> {
    return this.#each(params.items, (item) => this.complete(item.jobId, { workerId: params.workerId, leaseId: item.leaseId, result: item.result }));
  }

  async failMany(params: FailManyParams): Promise<BatchResult> {
    return this.#each(params.items, (item) => this.fail(item.jobId, { workerId: params.workerId, ...item }));
  }

  /** Returns a worker's processing jobs to pending (deregistration). */
  releaseWorker(workerId: string): void {
    for (const job of this.all) {
      if (job.status === 'processing' && job.assignedWorkerId === workerId) this.#set(job, 'pending', this.#noLease());
    }
  }

  async #each<T extends { jobId: string }>(items: T[], apply: (item: T) => Promise<{ success: boolean; willRetry?: boolean }>): Promise<BatchResult> {
    const results = [];
    for (const item of items) {
      try {
        const answer = await apply(item);
        results.push({ jobId: item.jobId, success: true, willRetry: answer.willRetry });
      } catch (err) {
        results.push({ jobId: item.jobId, success: false, error: (err as Error).message });
      }
    }
    return { results };
  }

  #noLease(): Partial<Job> {
    return { assignedWorkerId: null, leaseId: null, leaseExpiresAt: null };
  }

  #set(job: Job, status: JobStatus, changes: Partial<Job> = {}): void {
    Object.assign(job, changes, { status, updatedAt: this.#now().toISOString() });
  }
}

export class FakeDlq implements DlqApi {
  readonly #jobs: FakeJobs;
  readonly replays: FakeDlqReplays;

  constructor(jobs: FakeJobs) {
    this.#jobs = jobs;
    this.replays = new FakeDlqReplays(jobs);
  }

  #select(queueName: string | undefined): Job[] {
    return this.#jobs.all.filter((job) => job.status === 'deadletter' && (queueName === undefined || job.queueName === queueName));
  }

  async list(params: ListDlqParams = {}): Promise<JobSummary[]> {
    const offset = params.offset ?? 0;
    return this.#select(params.queueName).reverse().slice(offset, offset + (params.limit ?? 50)).map(summary);
  }

  async retry(params: RetryDlqParams = {}): Promise<{ retriedCount: number; retriedJobs: string[] }> {
    const chosen = params.jobIds
      ? this.#select(undefined).filter((job) => params.jobIds!.includes(job.id))
      : this.#select(params.queueName).slice(0, params.limit ?? 100);
    for (const job of chosen) Object.assign(job, { status: 'pending', retryCount: 0, lastError: null, scheduledAt: null });
    return { retriedCount: chosen.length, retriedJobs: chosen.map((job) => job.id) };
  }

  async purge(params: PurgeDlqParams): Promise<{ purgedCount: number }> {
    if (params.confirm !== true) refuse(400, 'VALIDATION_ERROR', 'confirm must be true');
    const doomed = new Set(this.#select(params.queueName).slice(0, params.limit ?? 10_000));
    const keep = this.#jobs.all.filter((job) => !doomed.has(job));
    this.#jobs.all.splice(0, this.#jobs.all.length, ...keep);
    return { purgedCount: doomed.size };
  }
}

/**
 * Paced DLQ replays without the pace: `create` replays every matching dead
 * letter at once (edits applied) and answers the replay completed, so code
 * that starts one and waits for it runs straight through.
 */
export class FakeDlqReplays implements DlqReplaysApi {
  readonly #jobs: FakeJobs;
  readonly #replays: DlqReplay[] = [];

  constructor(jobs: FakeJobs) {
    this.#jobs = jobs;
  }

  async create(params: CreateDlqReplayParams = {}): Promise<DlqReplay> {
    if (params.perSecond !== undefined && !(Number.isInteger(params.perSecond) && params.perSecond >= 1 && params.perSecond <= 10_000)) {
      refuse(400, 'VALIDATION_ERROR', 'per_second must be >= 1 and <= 10000');
    }
    if (params.jobIds !== undefined && params.jobIds.length === 0) refuse(400, 'VALIDATION_ERROR', 'job_ids must NOT have fewer than 1 items');
    if ('payload' in (params.edits ?? {})) refuse(400, 'VALIDATION_ERROR', 'edits.payload is not allowed: change payloads with PATCH /jobs/{id}, then replay');
    const after = params.createdAfter === undefined ? null : new Date(params.createdAfter).getTime();
    const before = params.createdBefore === undefined ? null : new Date(params.createdBefore).getTime();
    const needle = params.errorContains?.toLowerCase();
    const ids = params.jobIds ? new Set(params.jobIds.map((id) => id.toLowerCase())) : null;
    const chosen = this.#jobs.all
      .filter((job) => job.status === 'deadletter'
        && (params.queueName === undefined || job.queueName === params.queueName)
        && (ids === null || ids.has(job.id))
        && (after === null || new Date(job.createdAt).getTime() >= after)
        && (before === null || new Date(job.createdAt).getTime() < before)
        && (needle === undefined || (job.lastError ?? '').toLowerCase().includes(needle)))
      .slice(0, params.limit ?? 100_000);
    const edits = { priority: params.edits?.priority ?? null, maxRetries: params.edits?.maxRetries ?? null, queueName: params.edits?.queueName ?? null };
    for (const job of chosen) {
      Object.assign(job, { status: 'pending', retryCount: 0, lastError: null, scheduledAt: null, completedAt: null });
      if (edits.priority !== null) job.priority = edits.priority;
      if (edits.maxRetries !== null) job.maxRetries = edits.maxRetries;
      if (edits.queueName !== null) job.queueName = edits.queueName;
    }
    const now = new Date().toISOString();
    const replay: DlqReplay = {
      id: randomUUID(), status: 'completed', queueName: params.queueName ?? null, jobIdsCount: params.jobIds?.length ?? null,
      errorContains: params.errorContains ?? null, createdAfter: iso(params.createdAfter), createdBefore: iso(params.createdBefore),
      limit: params.limit ?? 100_000, edits, perSecond: params.perSecond ?? null, batchSize: params.perSecond ? Math.min(1000, Math.ceil(params.perSecond / 10)) : 1000,
      total: chosen.length, done: chosen.length, skipped: 0, remaining: 0, progress: 100, rate: null, etaSeconds: null,
      createdBy: 'api_key:fake', cancelledBy: null, error: null, createdAt: now, startedAt: now, updatedAt: now, finishedAt: now,
    };
    this.#replays.unshift(replay);
    return clone(replay);
  }

  async get(id: string): Promise<DlqReplay> {
    const replay = this.#replays.find((r) => r.id === id.toLowerCase());
    if (!replay) refuse(404, 'NOT_FOUND', 'DLQ replay not found');
    return clone(replay);
  }

  async list(params: ListDlqReplaysParams = {}): Promise<DlqReplay[]> {
    const offset = params.offset ?? 0;
    return this.#replays.filter((r) => params.status === undefined || r.status === params.status).slice(offset, offset + (params.limit ?? 50)).map(clone);
  }

  async cancel(id: string): Promise<DlqReplay> {
    const replay = await this.get(id);
    if (replay.status !== 'cancelled') refuse(409, 'CONFLICT', `DLQ replay is ${replay.status}: only a running replay can be cancelled`);
    return replay;
  }

  async waitFor(id: string, options: WaitForDlqReplayOptions = {}): Promise<DlqReplay> {
    const replay = await this.get(id);
    options.onProgress?.(replay);
    return replay;
  }
}
