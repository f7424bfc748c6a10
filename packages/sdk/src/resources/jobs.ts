/** Jobs, the worker protocol and the dead-letter queue (docs/compatibility.md §3.3, §3.4, §3.6, §3.10). */
import type { JobStatus } from '@spool/protocol';
import { ConflictError } from '../errors.js';
import type { CallOptions, Transport } from '../http.js';
import { Resource, seg, type Api } from './resource.js';
import { DlqReplaysResource } from './dlq-replays.js';
import { activeTraceHeaders } from '../tracing.js';

export type { JobStatus };
export type Json = unknown;
export type OrderDir = 'asc' | 'desc';

export interface Job<P = Json, R = Json> {
  id: string;
  organizationId: string;
  queueName: string;
  status: JobStatus;
  payload: P;
  result: R | null;
  retryCount: number;
  maxRetries: number;
  lastError: string | null;
  createdAt: string;
  scheduledAt: string | null;
  startedAt: string | null;
  completedAt: string | null;
  expiresAt: string | null;
  priority: number;
  tags: Record<string, unknown> | null;
  timeoutSeconds: number;
  parentJobId: string | null;
  completionWebhook: string | null;
  assignedWorkerId: string | null;
  leaseId: string | null;
  leaseExpiresAt: string | null;
  idempotencyKey: string | null;
  updatedAt: string;
  workflowId: string | null;
  dependencyMode: 'all' | 'any' | null;
  dependenciesMet: boolean | null;
  /** Spool extension: the W3C trace context the job was enqueued in (null outside a trace). */
  traceparent?: string | null;
  tracestate?: string | null;
  /** Spool extension: the server enforces `timeoutSeconds` (set on the job, its schedule or its queue's config). */
  timeoutEnforced?: boolean;
  /** Spool extension: while processing with an enforced timeout, when this attempt times out. */
  deadlineAt?: string | null;
  /** Spool extension: counts against the queue's concurrency_key_limit while processing. */
  concurrencyKey?: string | null;
  /** Spool extension: the key whose turn the job waits for in a queue with fair share. */
  fairnessKey?: string | null;
  /** Spool extension: the job key the job stands for, and the mode of the enqueue that created or last changed it. */
  jobKey?: string | null;
  jobKeyMode?: JobKeyMode | null;
}

export type JobKeyMode = 'dedupe' | 'debounce' | 'throttle' | 'replace';

/** Spool extension: what an enqueue with a job key did. */
export type KeyOutcome = 'created' | 'deduplicated' | 'debounced' | 'throttled' | 'replaced';

/**
 * Spool extension: a key policy for an enqueue (docs/jobs-api.md, "Job keys").
 * dedupe returns the key's waiting or running job; debounce keeps one waiting
 * job with the latest payload, run `windowSecs` after the latest enqueue (at
 * most `maxWaitSecs` after the first); throttle lets one job per `windowSecs`
 * through; replace gives the waiting job the new payload and options.
 */
export type JobKeyPolicy =
  | { key: string; mode: 'dedupe' | 'replace' }
  | { key: string; mode: 'throttle'; windowSecs: number }
  | { key: string; mode: 'debounce'; windowSecs: number; maxWaitSecs?: number };

export interface JobSummary {
  id: string;
  queueName: string;
  status: JobStatus;
  priority: number;
  retryCount: number;
  createdAt: string;
  scheduledAt: string | null;
  startedAt: string | null;
  completedAt: string | null;
}

export interface CreateJobParams<P = Json> {
  queueName: string;
  payload: P;
  priority?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
  scheduledAt?: Date | string;
  expiresAt?: Date | string;
  /** Repeats with the same key return the first job's id with `created: false`. */
  idempotencyKey?: string;
  tags?: Record<string, unknown>;
  parentJobId?: string;
  completionWebhook?: string;
  /**
   * Spool extension: the W3C trace context to enqueue the job in. By default
   * the active OpenTelemetry span's is sent (as the traceparent/tracestate
   * headers) when `@opentelemetry/api` is installed and a span is active.
   */
  traceparent?: string;
  tracestate?: string;
  /** Spool extension: see `Job.concurrencyKey`. */
  concurrencyKey?: string;
  /** Spool extension: see `Job.fairnessKey`. */
  fairnessKey?: string;
  /** Spool extension: a key policy (dedupe, debounce, throttle, replace). */
  jobKey?: JobKeyPolicy;
}

export interface CreateJobResult {
  /** The job created, or with `jobKey` the job that stands for the key. */
  id: string;
  created: boolean;
  /** Spool extension, set when the enqueue had a `jobKey`. */
  keyOutcome?: KeyOutcome;
}

export interface ListJobsParams {
  queueName?: string;
  status?: JobStatus;
  tag?: string;
  limit?: number;
  offset?: number;
  orderBy?: string;
  orderDir?: OrderDir;
}

export interface JobStats {
  pending: number;
  scheduled: number;
  processing: number;
  completed: number;
  failed: number;
  deadletter: number;
  cancelled: number;
  total: number;
}

export interface JobStatusInfo {
  id: string;
  status: JobStatus;
  queueName: string;
  retryCount: number;
  createdAt: string;
  completedAt: string | null;
}

export interface BulkJobItem<P = Json> {
  payload: P;
  priority?: number;
  idempotencyKey?: string;
  scheduledAt?: Date | string;
  /** Spool extension: this job's own W3C trace context; items without one take the active span's (sent as headers). */
  traceparent?: string;
  tracestate?: string;
  /** Spool extensions, as on `CreateJobParams`. */
  maxRetries?: number;
  timeoutSeconds?: number;
  expiresAt?: Date | string;
  tags?: Record<string, unknown>;
  concurrencyKey?: string;
  fairnessKey?: string;
  jobKey?: JobKeyPolicy;
}

export interface BulkEnqueueParams<P = Json> {
  queueName: string;
  jobs: BulkJobItem<P>[];
  defaultPriority?: number;
  defaultMaxRetries?: number;
  defaultTimeoutSeconds?: number;
}

export interface BulkEnqueueResult {
  succeeded: { index: number; jobId: string; created: boolean; keyOutcome?: KeyOutcome }[];
  failed: { index: number; error: string }[];
  total: number;
  successCount: number;
  failureCount: number;
}

/**
 * Spool extension: what `jobs.update` changes; absent fields stay as they
 * are, and at least one must be given.
 */
export interface UpdateJobParams<P = Json> {
  payload?: P;
  priority?: number;
  /** Moves the job to another queue (the key needs both queues). */
  queueName?: string;
  maxRetries?: number;
  /** null clears them. */
  tags?: Record<string, unknown> | null;
  /** Pending or scheduled jobs only: in the future makes the job scheduled; now, the past or null makes it due now. */
  scheduledAt?: Date | string | null;
}

export interface SetPriorityResult {
  jobId: string;
  oldPriority: number;
  newPriority: number;
}

/**
 * Spool extension: what a dependency's final failure (dead-lettered, failed,
 * cancelled, expired) does to the job depending on it. `block` (default):
 * it waits, and runs if the dependency is retried and completes; `cancel`:
 * it is cancelled, and its own dependents follow their edges; `continue`:
 * the edge counts as satisfied (see `jobs.dependencyResults`).
 */
export type OnParentFailure = 'block' | 'cancel' | 'continue';

export interface DependencyInfo {
  jobId: string;
  queueName: string;
  status: JobStatus;
  dependencyType: string;
  /** Spool extension. */
  onParentFailure?: OnParentFailure;
}

/** Spool extension: how one dependency of a job ended (GET /jobs/{id}/dependencies/results). */
export interface DependencyResult<R = Json> {
  jobId: string;
  /** Its key in its workflow (null outside one). */
  key: string | null;
  /** null with `status`: the job no longer exists. */
  queueName: string | null;
  /** null: the job no longer exists (retention, DLQ purge). */
  status: JobStatus | null;
  /** What it completed with; null until it has. */
  result: R | null;
  /** Its last error when it has not completed: why it failed, was cancelled or expired. */
  error: string | null;
  /** When it ended, whichever way. */
  completedAt: string | null;
  dependencyType: string;
  onParentFailure: OnParentFailure;
}

export interface JobDependencies {
  jobId: string;
  status: JobStatus;
  dependenciesMet: boolean;
  dependencies: DependencyInfo[];
  dependents: DependencyInfo[];
}

export interface AddDependenciesParams {
  dependsOnJobIds: string[];
  dependencyType?: string;
  /** Spool extension: changes the job's dependency mode. */
  dependencyMode?: 'all' | 'any';
  /** Spool extension: stored on each new edge (default `block`). */
  onParentFailure?: OnParentFailure;
}

export interface AddDependenciesResult {
  added: number;
  dependencies: { jobId: string; dependsOnJobId: string; dependencyType: string; onParentFailure?: OnParentFailure }[];
  dependenciesAdded: number;
  dependenciesMet: boolean;
  /** Spool extension: the job's status afterwards (`cancelled` when a `cancel` edge points to a job that has already failed). */
  status?: JobStatus;
}

/** Spool extension: a reason code of `jobs.explain` (docs/jobs-api.md, "Explain"). */
export type JobExplainCode =
  | 'queue_paused' | 'scheduled' | 'debounced' | 'in_backoff' | 'snoozed' | 'rate_limited' | 'concurrency_limit' | 'concurrency_key_full'
  | 'dependencies_pending' | 'blocked_by_failed_dependency' | 'expired' | 'no_live_workers' | 'leased' | 'queued_behind'
  | 'finished' | 'dead_lettered' | 'failed' | 'cancelled' | 'not_claimable';

/** One reason a job is (not) running; besides the common fields, only the details of its code are present. */
export interface JobExplainReason {
  code: JobExplainCode;
  /** What holds the job, in plain words, and what to do next. */
  message: string;
  /** False for hints (`no_live_workers`, `queued_behind`), which do not stop a claim. */
  blocking: boolean;
  /** When the reason ends by itself (scheduled, in_backoff, rate_limited, leased). */
  until?: string;
  queueName?: string;
  pausedAt?: string | null;
  pauseReason?: string | null;
  retryCount?: number;
  maxRetries?: number;
  lastError?: string | null;
  completedAt?: string | null;
  expiresAt?: string;
  workerId?: string | null;
  cancelRequested?: boolean;
  dependencyMode?: 'all' | 'any';
  /** Dependencies not completed (`status` null: the job was deleted). */
  dependencies?: { jobId: string; status: JobStatus | null }[];
  waitingCount?: number;
  limit?: number;
  running?: number;
  concurrencyKey?: string;
  rateLimit?: number;
  burst?: number;
  tokensAvailable?: number;
  /** Claimable jobs ahead in claim order, counted up to 10,000 (`aheadCapped`). */
  ahead?: number;
  aheadCapped?: boolean;
}

/** Spool extension: why a job is not running (GET /jobs/{id}/explain). */
export interface JobExplanation {
  jobId: string;
  queueName: string;
  status: JobStatus;
  /** A claim on the job's queue right now could take it. */
  runnable: boolean;
  reasons: JobExplainReason[];
  /** The server's time the facts are from. */
  checkedAt: string;
}

// ---- worker protocol ----

/** The queue to claim from (`queueName`), or several at once (`queueNames`, a Spool extension): exactly one of the two. */
export type ClaimParams = ClaimBaseParams & (
  | { queueName: string; queueNames?: never }
  /**
   * Spool extension: 1…32 distinct queues. The batch takes the best jobs
   * across them (higher priority first, then older); each queue's pause and
   * flow control hold as for a claim of that queue alone.
   */
  | { queueNames: string[]; queueName?: never }
);

/** What every claim says besides its queues. */
export interface ClaimBaseParams {
  workerId: string;
  /** 1…100, default 1. */
  limit?: number;
  /** 5…3600, default 30. */
  leaseDurationSecs?: number;
  /** Spool extension: wait up to this long (0…30000 ms) for a job when none is due. */
  waitMs?: number;
}

export interface ClaimedJob<P = Json> {
  id: string;
  queueName: string;
  payload: P;
  retryCount: number;
  maxRetries: number;
  timeoutSeconds: number;
  leaseExpiresAt: string | null;
  /** Spool extension: the server enforces `timeoutSeconds`; past `deadlineAt` it ends the attempt. */
  timeoutEnforced?: boolean;
  deadlineAt?: string | null;
  /** Fencing token; `null` from servers that fence by worker id only. */
  leaseId: string | null;
  /** Spool extension: the W3C trace context the job was enqueued in; the worker's span for the job descends from and links to it. */
  traceparent?: string | null;
  tracestate?: string | null;
  [extra: string]: unknown;
}

export interface CompleteParams {
  workerId: string;
  result?: Json;
  leaseId?: string | null;
}

export interface FailParams {
  workerId: string;
  error: string;
  leaseId?: string | null;
  /** Spool extension: `false` sends the job straight to the dead-letter queue. */
  retryable?: boolean;
}

export interface FailResult {
  success: boolean;
  willRetry?: boolean;
}

/** Spool extension: puts a held job off without using an attempt (POST /jobs/{id}/snooze). */
export interface SnoozeParams {
  workerId: string;
  leaseId?: string | null;
  /** Whole seconds until the job may be claimed again, 1..86400. */
  delaySecs: number;
}

export interface SnoozeResult {
  success: boolean;
  /** `pending` (waits until `scheduledAt`), or `cancelled` when a cancel had been requested while it ran. */
  status: JobStatus;
  /** When the job becomes claimable again; null when it ended cancelled. */
  scheduledAt: string | null;
  /** Unchanged by the snooze. */
  retryCount: number;
}

export interface HeartbeatParams {
  workerId: string;
  leaseDurationSecs: number;
  leaseId?: string | null;
}

export interface HeartbeatResult {
  success: boolean;
  /** Spool extension: someone asked to cancel this running job. */
  cancelRequested?: boolean;
  /** Spool extension: never past `deadlineAt`. */
  leaseExpiresAt?: string;
  /** Spool extension: when this attempt times out (a server-enforced timeout), else null. */
  deadlineAt?: string | null;
  /** Spool extension: the attempt timed out (false in a success; a late heartbeat is refused with `details.timed_out`). */
  timedOut?: boolean;
}

/** Spool extension: a running job's progress (POST /jobs/{id}/progress). Omitted fields keep their value; null clears. */
export interface ProgressParams {
  workerId: string;
  leaseId?: string | null;
  /** 0..100 */
  percent?: number | null;
  /** At most 1,000 characters. */
  message?: string | null;
  /** Any JSON up to 16 KiB, sent verbatim. */
  metadata?: Json | null;
}

/** One recorded transition or change of a job (`jobs.history`). */
export interface JobHistoryEntry {
  /** Position in the history log; increases with time. */
  id: number;
  /** What happened: create, claim, complete, fail_retry, fail_final, cancel, retry, lease_expired, timeout, snooze, edit, debounce, replace, … */
  event: string;
  fromStatus: JobStatus | null;
  toStatus: JobStatus | null;
  workerId: string | null;
  leaseId: string | null;
  message: string | null;
  createdAt: string;
  /**
   * The credential that asked for the change (an edit or priority change, a
   * job key's debounce or replace, or a retry, DLQ replay or purge, cancel,
   * or workflow cancel or retry through the API): `api_key:<key id>`, or
   * `api_key:<key id>/session:<session id>` for an access token; null for the
   * server's own transitions.
   */
  actor: string | null;
  /**
   * What an `edit`, `debounce` or `replace` changed (`fields`, `from`, `to`,
   * with the wire's snake_case field names); of a `retry` by a paced DLQ
   * replay, `replay_id` too; why the server cancelled a job for a
   * dependency (`reason: 'parent_failed'`, …); null for other events.
   */
  details: Record<string, unknown> | null;
}

export interface JobProgress {
  percent: number | null;
  message: string | null;
  metadata: Json | null;
  updatedAt: string;
}

/** Spool extension: lines for a running job's log (POST /jobs/{id}/logs). */
export interface AppendLogsParams {
  workerId: string;
  leaseId?: string | null;
  /** 1..100 lines of at most 4,096 characters. */
  lines: string[];
}

export interface AppendLogsResult {
  success: boolean;
  written: number;
  /** Older lines deleted, and lines of this request not kept, to stay within the job's bound (1,000 lines, 256 KiB). */
  dropped: number;
}

export interface JobLogLine {
  /** Increases with time: pass the last one as `after` to read on. */
  seq: number;
  at: string;
  line: string;
}

export interface CompleteManyParams {
  workerId: string;
  items: { jobId: string; leaseId?: string | null; result?: Json }[];
}

export interface FailManyParams {
  workerId: string;
  items: { jobId: string; leaseId?: string | null; error: string; retryable?: boolean }[];
}

export interface BatchItemResult {
  jobId: string;
  success: boolean;
  willRetry?: boolean;
  error?: string;
}

export interface BatchResult {
  results: BatchItemResult[];
}

/** Longer than any long poll: the claim request must outlive the server's wait. */
const CLAIM_TIMEOUT_SLACK_MS = 10_000;

export class JobsResource extends Resource {
  /** Enqueues one job. With an `idempotencyKey` the call is safe to retry and is retried on 5xx. */
  create<P = Json>(params: CreateJobParams<P>, options?: CallOptions): Promise<CreateJobResult> {
    // A context in the params goes in the body; otherwise the active span's, as headers.
    const headers = params.traceparent === undefined ? activeTraceHeaders() : null;
    return this.call({ method: 'POST', path: '/api/v1/jobs', body: params, idempotent: params.idempotencyKey !== undefined, headers: headers ?? undefined }, options);
  }

  list(params: ListJobsParams = {}, options?: CallOptions): Promise<JobSummary[]> {
    return this.call({ method: 'GET', path: '/api/v1/jobs', query: { ...params } }, options);
  }

  get<P = Json, R = Json>(id: string, options?: CallOptions): Promise<Job<P, R>> {
    return this.call({ method: 'GET', path: `/api/v1/jobs/${seg(id)}` }, options);
  }

  /**
   * Spool extension: why the job is not running: whether a claim could take
   * it now, and each reason with what to do next. Reads only. 404 from
   * servers without it (NotFoundError), as for an unknown job.
   */
  explain(id: string, options?: CallOptions): Promise<JobExplanation> {
    return this.call({ method: 'GET', path: `/api/v1/jobs/${seg(id)}/explain` }, options);
  }

  /**
   * Cancels a pending or scheduled job: `'cancelled'`. For a running job a
   * Spool server records the request and the worker is told on its next
   * heartbeat: `'cancel_requested'`. Finished jobs throw ConflictError (409).
   */
  async cancel(id: string, options?: CallOptions): Promise<'cancelled' | 'cancel_requested'> {
    try {
      await this.call({ method: 'DELETE', path: `/api/v1/jobs/${seg(id)}` }, options);
      return 'cancelled';
    } catch (err) {
      const details = err instanceof ConflictError ? (err.details as { cancel_requested?: unknown } | undefined) : undefined;
      if (details?.cancel_requested === true) return 'cancel_requested';
      throw err;
    }
  }

  /** Moves a failed or dead-lettered job back to pending; returns the job. */
  retry<P = Json>(id: string, options?: CallOptions): Promise<Job<P>> {
    return this.call({ method: 'POST', path: `/api/v1/jobs/${seg(id)}/retry` }, options);
  }

  /**
   * Spool extension: edits a pending, scheduled or dead-lettered job and
   * returns it. A dead-lettered job stays dead-lettered: `retry` it
   * afterwards to run the edited job. A processing or finished job throws
   * ConflictError (409; cancel it first). Recorded in the job's history with
   * the credential that asked. Safe to repeat: an edit that changes nothing
   * writes nothing.
   */
  update<P = Json>(id: string, params: UpdateJobParams<P>, options?: CallOptions): Promise<Job<P>> {
    return this.call({ method: 'PATCH', path: `/api/v1/jobs/${seg(id)}`, body: params, idempotent: true }, options);
  }

  setPriority(id: string, priority: number, options?: CallOptions): Promise<SetPriorityResult> {
    return this.call({ method: 'PUT', path: `/api/v1/jobs/${seg(id)}/priority`, body: { priority } }, options);
  }

  stats(options?: CallOptions): Promise<JobStats> {
    return this.call({ method: 'GET', path: '/api/v1/jobs/stats' }, options);
  }

  /** Statuses of up to 100 jobs; unknown ids are left out. */
  statuses(ids: string[], options?: CallOptions): Promise<JobStatusInfo[]> {
    return this.call({ method: 'GET', path: '/api/v1/jobs/status', query: { ids } }, options);
  }

  /** Enqueues many jobs in one request (one result per item, in `succeeded` or `failed`). */
  bulk<P = Json>(params: BulkEnqueueParams<P>, options?: CallOptions): Promise<BulkEnqueueResult> {
    const idempotent = params.jobs.every((job) => job.idempotencyKey !== undefined);
    const headers = activeTraceHeaders();
    return this.call({ method: 'POST', path: '/api/v1/jobs/bulk', body: params, idempotent, headers: headers ?? undefined }, options);
  }

  getDependencies(id: string, options?: CallOptions): Promise<JobDependencies> {
    return this.call({ method: 'GET', path: `/api/v1/jobs/${seg(id)}/dependencies` }, options);
  }

  addDependencies(id: string, params: AddDependenciesParams, options?: CallOptions): Promise<AddDependenciesResult> {
    return this.call({ method: 'POST', path: `/api/v1/jobs/${seg(id)}/dependencies`, body: params }, options);
  }

  /**
   * Spool extension: how each of the job's dependencies ended (status,
   * result, error), in the order they were added; dependencies of queues the
   * key may not use are left out. Worker keys may read it (a handler's
   * `ctx.dependencyResults()`). At most 100 per call (`offset` for more).
   */
  async dependencyResults<R = Json>(id: string, params: { limit?: number; offset?: number } = {}, options?: CallOptions): Promise<DependencyResult<R>[]> {
    const answer = await this.call<{ results: DependencyResult<R>[] }>({ method: 'GET', path: `/api/v1/jobs/${seg(id)}/dependencies/results`, query: { ...params } }, options);
    return answer.results;
  }

  /**
   * Leases up to `limit` due jobs to `workerId`. Never retried on 5xx: a lost
   * answer would strand the leased jobs until their leases expire.
   */
  async claim<P = Json>(params: ClaimParams, options?: CallOptions): Promise<ClaimedJob<P>[]> {
    const waitMs = params.waitMs ?? 0;
    const timeoutMs = waitMs > 0 ? Math.max(options?.timeoutMs ?? 0, waitMs + CLAIM_TIMEOUT_SLACK_MS) : options?.timeoutMs;
    const answer = await this.call<{ jobs: ClaimedJob<P>[] }>({ method: 'POST', path: '/api/v1/jobs/claim', body: params }, { ...options, timeoutMs });
    return answer.jobs ?? [];
  }

  complete(id: string, params: CompleteParams, options?: CallOptions): Promise<{ success: boolean }> {
    return this.call({ method: 'POST', path: `/api/v1/jobs/${seg(id)}/complete`, body: params }, options);
  }

  fail(id: string, params: FailParams, options?: CallOptions): Promise<FailResult> {
    return this.call({ method: 'POST', path: `/api/v1/jobs/${seg(id)}/fail`, body: params }, options);
  }

  /**
   * Spool extension: puts a job this worker holds off for `delaySecs` (1..86400)
   * without using an attempt: pending again, claimable after the delay, with
   * `retryCount` unchanged. Fenced like fail (NotFoundError for a job not
   * ours, ConflictError LEASE_EXPIRED for a stale lease); after a cancel
   * request it ends the job cancelled. Not retried on its own (a lost answer
   * would be refused the second time).
   */
  snooze(id: string, params: SnoozeParams, options?: CallOptions): Promise<SnoozeResult> {
    return this.call({ method: 'POST', path: `/api/v1/jobs/${seg(id)}/snooze`, body: params }, options);
  }

  /** Extends the lease; idempotent, so retried. `cancelRequested` tells the worker to stop the job. */
  heartbeat(id: string, params: HeartbeatParams, options?: CallOptions): Promise<HeartbeatResult> {
    return this.call({ method: 'POST', path: `/api/v1/jobs/${seg(id)}/heartbeat`, body: params, idempotent: true }, options);
  }

  /** Spool extension: records the progress of a job this worker holds (fenced like heartbeat; idempotent, so retried). */
  progress(id: string, params: ProgressParams, options?: CallOptions): Promise<{ success: boolean; progress: JobProgress }> {
    return this.call({ method: 'POST', path: `/api/v1/jobs/${seg(id)}/progress`, body: params, idempotent: true }, options);
  }

  /** Spool extension: appends lines to the log of a job this worker holds (fenced like heartbeat; not retried: a lost answer would write them twice). */
  appendLogs(id: string, params: AppendLogsParams, options?: CallOptions): Promise<AppendLogsResult> {
    return this.call({ method: 'POST', path: `/api/v1/jobs/${seg(id)}/logs`, body: params }, options);
  }

  /** Spool extension: the job's recorded transitions and changes, oldest first (`limit` 1..1000, default 500). */
  history(id: string, params: { limit?: number } = {}, options?: CallOptions): Promise<JobHistoryEntry[]> {
    return this.call({ method: 'GET', path: `/api/v1/jobs/${seg(id)}/history`, query: { ...params } }, options);
  }

  /** Spool extension: the progress the job's worker last reported (null when none). */
  async getProgress(id: string, options?: CallOptions): Promise<JobProgress | null> {
    const answer = await this.call<{ progress: JobProgress | null }>({ method: 'GET', path: `/api/v1/jobs/${seg(id)}/progress` }, options);
    return answer.progress;
  }

  /** Spool extension: the job's log lines after seq `after`, oldest first (at most 1,000). */
  async logs(id: string, params: { after?: number; limit?: number } = {}, options?: CallOptions): Promise<JobLogLine[]> {
    const answer = await this.call<{ lines: JobLogLine[] }>({ method: 'GET', path: `/api/v1/jobs/${seg(id)}/logs`, query: { ...params } }, options);
    return answer.lines;
  }

  /** Spool extension: completes many jobs in one request (404 from servers without it). */
  completeMany(params: CompleteManyParams, options?: CallOptions): Promise<BatchResult> {
    return this.call({ method: 'POST', path: '/api/v1/jobs/complete', body: params }, options);
  }

  /** Spool extension: fails many jobs in one request (404 from servers without it). */
  failMany(params: FailManyParams, options?: CallOptions): Promise<BatchResult> {
    return this.call({ method: 'POST', path: '/api/v1/jobs/fail', body: params }, options);
  }
}

export interface ListDlqParams {
  queueName?: string;
  limit?: number;
  offset?: number;
}

export interface RetryDlqParams {
  jobIds?: string[];
  queueName?: string;
  limit?: number;
}

export interface PurgeDlqParams {
  queueName?: string;
  olderThan?: Date | string;
  limit?: number;
  /** Must be `true`; the server refuses otherwise. */
  confirm: boolean;
}

export class DlqResource extends Resource {
  /** Spool extension: paced replays of any size, with progress and cancel (404 from servers without them). */
  readonly replays: Api<DlqReplaysResource>;

  constructor(transport: Transport) {
    super(transport);
    this.replays = new DlqReplaysResource(transport);
  }

  list(params: ListDlqParams = {}, options?: CallOptions): Promise<JobSummary[]> {
    return this.call({ method: 'GET', path: '/api/v1/jobs/dlq', query: { ...params } }, options);
  }

  /** Moves dead-lettered jobs back to pending: the given ids, else the oldest in the queue, else in the org. */
  retry(params: RetryDlqParams = {}, options?: CallOptions): Promise<{ retriedCount: number; retriedJobs: string[] }> {
    return this.call({ method: 'POST', path: '/api/v1/jobs/dlq/retry', body: params }, options);
  }

  purge(params: PurgeDlqParams, options?: CallOptions): Promise<{ purgedCount: number }> {
    return this.call({ method: 'POST', path: '/api/v1/jobs/dlq/purge', body: params }, options);
  }
}
