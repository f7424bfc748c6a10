import { Metadata, type ServerUnaryCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { LeaseExpiredError, LIMITS, NotFoundError, PayloadTooLargeError, ValidationError } from '@spool/protocol';
import {
  jobClaimOutcome,
  type ClaimOutcome,
  jobFailMany,
  jobGet,
  jobHeartbeat,
  queueJobCounts,
  type FenceFailure,
  type JobRow,
  type NewJob,
} from '@spool/engine';
import type { Grant, Operation } from '../authorization.js';
import { admitJobs, enqueueAdmitted } from '../http/job-admission.js';
import { jsonBytes } from '../wire/common.js';
import { first, traceMetadata, unary, type GrpcContext } from './call.js';
import { JOB_KEY_METADATA, KEY_OUTCOME_METADATA, jobKeyFromMetadata } from '../job-key.js';
import { enqueueTraceHeaders, parentTraceHeaders } from '../http/trace-context.js';
import { ATTR_MESSAGING_MESSAGE_ID, endOnFailure, recordClaimSpan, startEnqueueSpan, startSettleTrace } from '../trace-spans.js';
import { fromTimestamp, jobToProto, structToJson, toTimestamp, type ProtoJob, type ProtoStruct, type ProtoTimestamp } from './convert.js';
import { processJobs, streamJobs } from './queue-streams.js';
import { batchSize, checkQueueName, checkWorkerId, intOrDefault, leaseSeconds, optionalString } from './validate.js';

/* QueueService (docs/compatibility.md §5): request and response shapes as the server's proto-loader sees them. */

export interface EnqueueRequest {
  queue_name: string;
  payload: ProtoStruct | null;
  priority: number;
  max_retries: number;
  timeout_seconds: number;
  scheduled_at: ProtoTimestamp | null;
  idempotency_key: string;
  tags: Record<string, string>;
}
export interface DequeueRequest {
  queue_name: string;
  worker_id: string;
  lease_duration_secs: number;
  batch_size: number;
}
export interface CompleteRequest {
  job_id: string;
  worker_id: string;
  result: ProtoStruct | null;
  lease_id: string;
}
export interface FailRequest {
  job_id: string;
  worker_id: string;
  error: string;
  retry: boolean;
  lease_id: string;
}
export interface RenewLeaseRequest {
  job_id: string;
  worker_id: string;
  extension_secs: number;
  lease_id: string;
}
export interface FailResponse {
  success: boolean;
  will_retry: boolean;
  next_retry_delay_secs: number;
}
export interface RenewLeaseResponse {
  success: boolean;
  new_expires_at: ProtoTimestamp | null;
}

/**
 * Creates one job; an idempotent repeat answers the original id with
 * `created: false`. A `spool-job-key` metadata value (the REST job_key object
 * as JSON) applies a key policy; the answer's id is then the job that stands
 * for the key, and the response metadata `spool-key-outcome` says what
 * happened (docs/jobs-api.md, "Job keys").
 */
export async function enqueue(ctx: GrpcContext, grant: Grant, request: EnqueueRequest, metadata?: Metadata, call?: ServerUnaryCall<EnqueueRequest, unknown>): Promise<{ job_id: string; created: boolean }> {
  const auth = grant.auth;
  // The proto has no trace fields: the W3C context comes as call metadata, checked like REST's headers.
  let trace = metadata ? enqueueTraceHeaders(traceMetadata(metadata)) : null;
  const queueName = checkQueueName(request.queue_name);
  const payload = request.payload ? structToJson(request.payload, 'payload') : {};
  const payloadBytes = jsonBytes(payload);
  if (payloadBytes > LIMITS.payloadBytesMax) {
    throw new PayloadTooLargeError(`payload is ${payloadBytes} bytes; the limit is ${LIMITS.payloadBytesMax}`, { field: 'payload' });
  }
  const tags = Object.keys(request.tags ?? {}).length > 0 ? request.tags : null;
  if (tags && jsonBytes(tags) > LIMITS.tagsBytesMax) throw new PayloadTooLargeError(`tags exceed ${LIMITS.tagsBytesMax} bytes`, { field: 'tags' });
  const idempotencyKey = optionalString(request.idempotency_key);
  if (idempotencyKey && idempotencyKey.length > LIMITS.idempotencyKeyMax) {
    throw new ValidationError(`idempotency_key must be at most ${LIMITS.idempotencyKeyMax} characters`, { field: 'idempotency_key' });
  }
  const job: NewJob = {
    organizationId: auth.organizationId,
    queueName,
    payload,
    priority: intOrDefault(request.priority, 0, 'priority', LIMITS.priorityMin, LIMITS.priorityMax),
    // 0 = unset: the queue's configured default, else the server's (LIMITS.*Default).
    maxRetries: intOrDefault(request.max_retries, undefined, 'max_retries', LIMITS.maxRetriesMin, LIMITS.maxRetriesMax),
    timeoutSeconds: intOrDefault(request.timeout_seconds, undefined, 'timeout_seconds', LIMITS.timeoutSecondsMin, LIMITS.timeoutSecondsMax),
    scheduledAt: fromTimestamp(request.scheduled_at, 'scheduled_at'),
    idempotencyKey,
    tags,
  };
  job.jobKey = metadata ? jobKeyFromMetadata(first(metadata, JOB_KEY_METADATA), job.scheduledAt ?? null) : null;
  grant.queue(queueName);
  const span = ctx.tracing ? startEnqueueSpan(ctx.tracing, queueName, auth.organizationId, trace, 'grpc') : null;
  if (span) trace = span.context;
  job.traceparent = trace?.traceparent ?? null;
  job.tracestate = trace?.tracestate ?? null;
  try {
    // As REST POST /jobs: plan limits after validation, then the shared group commit.
    const quota = await admitJobs(ctx, auth, [{ queueName, payloadBytes }]);
    const inserted = await enqueueAdmitted(ctx, quota, job).catch(async (err: unknown) => {
      await quota.settle(0);
      throw err;
    });
    await quota.settle(inserted.created ? 1 : 0);
    if (inserted.keyOutcome && call) {
      const answer = new Metadata();
      answer.set(KEY_OUTCOME_METADATA, inserted.keyOutcome);
      call.sendMetadata(answer);
    }
    span?.setAttributes({ [ATTR_MESSAGING_MESSAGE_ID]: inserted.id, 'spool.created': inserted.created });
    span?.end();
    return { job_id: inserted.id, created: inserted.created };
  } catch (err) {
    span?.end(err);
    throw err;
  }
}

/** Claims up to `limit` due jobs of a queue for a worker (REST claim semantics). */
export async function claimJobs(ctx: GrpcContext, grant: Grant, queueName: string, workerId: string, limit: number, lease: number): Promise<ClaimOutcome> {
  return ctx.metrics.timeClaim(() => jobClaimOutcome(ctx.db, { organizationId: grant.organizationId, queueName, workerId, limit, leaseSeconds: lease }));
}

/** Checks a dequeue-shaped request; returns the clamped claim parameters. */
export function dequeueParams(grant: Grant, request: { queue_name: string; worker_id: string; lease_duration_secs: number; batch_size?: number }) {
  const queueName = checkQueueName(request.queue_name);
  const workerId = checkWorkerId(request.worker_id);
  grant.queue(queueName);
  return { queueName, workerId, lease: leaseSeconds(request.lease_duration_secs), limit: batchSize(request.batch_size ?? 1) };
}

/** Leases a batch; an empty list (never an error) when nothing is due. */
export async function dequeue(ctx: GrpcContext, grant: Grant, request: DequeueRequest, metadata?: Metadata): Promise<{ jobs: ProtoJob[] }> {
  const p = dequeueParams(grant, request);
  const startTime = ctx.tracing ? Date.now() : 0;
  const { jobs: rows } = await claimJobs(ctx, grant, p.queueName, p.workerId, p.limit, p.lease);
  if (ctx.tracing) {
    const parent = metadata ? parentTraceHeaders(traceMetadata(metadata)) : null;
    recordClaimSpan(ctx.tracing, { queue: p.queueName, organizationId: grant.organizationId, workerId: p.workerId, parent, startTime, jobs: rows });
  }
  return { jobs: rows.map(jobToProto) };
}

/** A timed-out attempt (an enforced timeout, migration 026) is a lost lease, answered like the REST routes. */
function fenceError(reason: FenceFailure, leaseSent = false): Error {
  if (reason === 'timed_out') {
    return leaseSent
      ? new LeaseExpiredError('Lease expired: the attempt timed out (it outlived its timeout_seconds) and the server fails it', { timed_out: true })
      : new NotFoundError('Job not processing for this worker: the attempt timed out (it outlived its timeout_seconds)', { timed_out: true });
  }
  if (reason === 'lease_mismatch') return new LeaseExpiredError('Lease expired: lease_id is not the job\'s current lease (the job was re-leased)');
  return new NotFoundError('Job not found, not processing, or not owned by this worker');
}

/** Completes a job the worker holds; NOT_FOUND when it does not, FAILED_PRECONDITION on a stale lease. */
export async function complete(ctx: GrpcContext, grant: Grant, request: CompleteRequest, metadata?: Metadata): Promise<{ success: boolean }> {
  const auth = grant.auth;
  const workerId = checkWorkerId(request.worker_id);
  if (!(await grant.jobInReach(ctx.db, request.job_id))) throw fenceError('not_owned');
  const result = request.result ? structToJson(request.result, 'result') : undefined;
  if (result !== undefined && jsonBytes(result) > LIMITS.payloadBytesMax) {
    throw new PayloadTooLargeError(`result exceeds ${LIMITS.payloadBytesMax} bytes`, { field: 'result' });
  }
  const leaseId = optionalString(request.lease_id);
  const trace = ctx.tracing
    ? startSettleTrace(ctx.tracing, ctx.db, { operation: 'complete', organizationId: auth.organizationId, workerId, ids: [request.job_id], parent: metadata ? parentTraceHeaders(traceMetadata(metadata)) : null })
    : null;
  const outcome = await endOnFailure(ctx.completeBatcher.complete(auth.organizationId, { id: request.job_id, workerId, leaseId, result }), trace);
  trace?.end(outcome.ok ? 1 : 0);
  ctx.metrics.observeCompletedOutcomes(auth.organizationId, [outcome]);
  if (!outcome.ok) throw fenceError(outcome.reason, leaseId != null);
  return { success: true };
}

/** Fails a job the worker holds: retried after the engine's backoff while retries remain and `retry` is set, else dead-lettered. */
export async function fail(ctx: GrpcContext, grant: Grant, request: FailRequest, metadata?: Metadata): Promise<FailResponse> {
  const auth = grant.auth;
  const workerId = checkWorkerId(request.worker_id);
  if (!(await grant.jobInReach(ctx.db, request.job_id))) throw fenceError('not_owned');
  const trace = ctx.tracing
    ? startSettleTrace(ctx.tracing, ctx.db, { operation: 'fail', organizationId: auth.organizationId, workerId, ids: [request.job_id], parent: metadata ? parentTraceHeaders(traceMetadata(metadata)) : null })
    : null;
  const [outcome] = await endOnFailure(jobFailMany(ctx.db, auth.organizationId, [{
    id: request.job_id,
    workerId,
    leaseId: optionalString(request.lease_id),
    // A worker's error text is kept even when it carries NULs, which PostgreSQL text cannot store.
    error: (request.error ?? '').replaceAll('\u0000', '\uFFFD'),
    retryable: request.retry === true,
  }]), trace);
  trace?.end(outcome!.ok ? 1 : 0);
  if (!outcome!.ok) throw fenceError(outcome!.reason, optionalString(request.lease_id) != null);
  // The engine schedules the retry (DESIGN's seconds backoff, docs/state-machine.md); report that delay.
  const delayMs = outcome!.willRetry && outcome!.retryAt ? outcome!.retryAt.getTime() - Date.now() : 0;
  return { success: true, will_retry: outcome!.willRetry, next_retry_delay_secs: Math.max(0, Math.ceil(delayMs / 1000)) };
}

/** Extends the worker's lease; a job it does not hold is `success: false`, not an error. */
export async function renewLease(ctx: GrpcContext, grant: Grant, request: RenewLeaseRequest): Promise<RenewLeaseResponse> {
  const auth = grant.auth;
  const workerId = checkWorkerId(request.worker_id);
  if (!(await grant.jobInReach(ctx.db, request.job_id))) return { success: false, new_expires_at: null };
  const outcome = await jobHeartbeat(ctx.db, {
    organizationId: auth.organizationId,
    id: request.job_id,
    workerId,
    leaseId: optionalString(request.lease_id),
    leaseSeconds: leaseSeconds(request.extension_secs),
  });
  if (!outcome.ok) return { success: false, new_expires_at: null };
  return { success: true, new_expires_at: toTimestamp(outcome.leaseExpiresAt) };
}

/** The job, or unset when no job of the caller's organization has that id (any string). */
export async function getJob(ctx: GrpcContext, grant: Grant, request: { job_id: string }): Promise<{ job: ProtoJob | null }> {
  const row = await jobGet(ctx.db, grant.organizationId, request.job_id);
  // A job of a queue out of the key's reach is answered like a missing one.
  return { job: row && grant.allows(row.queue_name) ? jobToProto(row) : null };
}

/** Counts by status; an unknown queue is all zeros. */
export async function getQueueStats(ctx: GrpcContext, grant: Grant, request: { queue_name: string }) {
  const queueName = checkQueueName(request.queue_name);
  grant.queue(queueName);
  const counts = await queueJobCounts(ctx.db, grant.organizationId, queueName);
  const s = counts.byStatus;
  return {
    queue_name: queueName,
    pending: String(s.pending),
    scheduled: String(s.scheduled),
    processing: String(s.processing),
    completed: String(s.completed),
    failed: String(s.failed),
    deadletter: String(s.deadletter),
    total: String(counts.total),
    max_age_ms: String(counts.oldestPendingAgeMs),
  };
}

/** The QueueService implementation for grpc-js. */
export function queueService(ctx: GrpcContext): UntypedServiceImplementation {
  const bind = <Req, Res>(method: string, operation: Operation, fn: (ctx: GrpcContext, grant: Grant, request: Req, metadata: Metadata, call: ServerUnaryCall<Req, Res>) => Promise<Res>) =>
    unary<Req, Res>(ctx, method, operation, (grant, request, metadata, call) => fn(ctx, grant, request, metadata, call));
  return {
    Enqueue: bind('Enqueue', 'job.create', enqueue),
    Dequeue: bind('Dequeue', 'job.claim', dequeue),
    Complete: bind('Complete', 'job.complete', complete),
    Fail: bind('Fail', 'job.fail', fail),
    RenewLease: bind('RenewLease', 'job.heartbeat', renewLease),
    GetJob: bind('GetJob', 'job.read', getJob),
    GetQueueStats: bind('GetQueueStats', 'queue.read', getQueueStats),
    StreamJobs: streamJobs(ctx),
    ProcessJobs: processJobs(ctx),
  };
}
