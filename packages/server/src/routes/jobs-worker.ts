import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type, type Static } from 'typebox';
import { LIMITS, PayloadTooLargeError, ValidationError } from '@spool/protocol';
import { jobClaimOutcome, jobClaimQueuesOutcome, jobCompleteMany, jobFailMany, jobHeartbeat, jobSnooze, type FenceFailure } from '@spool/engine';
import { ClaimWaiters, claimWithWait } from '../claim-waiters.js';
import type { AppContext } from '../app.js';
import type { Grant } from '../authorization.js';
import { grantOf } from '../http/route-authorization.js';
import { errorBody } from '../http/errors.js';
import { IdParams, QueueName, jsonBytes, nullable } from '../wire/common.js';
import { JobSchema, jobToWire } from '../wire/job.js';
import { parentTraceHeaders } from '../http/trace-context.js';
import { endOnFailure, recordClaimSpan, startSettleTrace } from '../trace-spans.js';
import { contractInt } from '../http/warnings.js';

const WorkerId = Type.String({ minLength: 1, maxLength: 255 });
const LeaseId = Type.Optional(nullable(Type.String({ maxLength: 100 })));
const LeaseSeconds = Type.Integer({ description: `clamped to ${LIMITS.leaseSecondsMin}..${LIMITS.leaseSecondsMax}; default ${LIMITS.leaseSecondsDefault}` });
/** Up to 1 MiB is accepted; Spool stores the first 4096 characters (docs/compatibility.md §3.4: "longer may be truncated"). */
const ErrorText = Type.String({ minLength: 1, maxLength: 1024 * 1024, description: `stored truncated to ${LIMITS.errorMessageMax} characters` });
const Retryable = Type.Optional(Type.Boolean({ description: 'extension: false dead-letters the job at once, whatever retries remain' }));

const ClaimBody = Type.Object({
  // Required unless queue_names is given: exactly one of the two (checked in the handler, with its own message).
  queue_name: Type.Optional(QueueName),
  queue_names: Type.Optional(Type.Array(QueueName, {
    minItems: 1,
    maxItems: LIMITS.claimQueuesMax,
    uniqueItems: true,
    description: `extension: claim from several queues at once instead of queue_name (exactly one of the two; 1..${LIMITS.claimQueuesMax} distinct names). `
      + 'The batch takes the best jobs across them, higher priority first, then older, as one queue would; each queue\'s pause, concurrency_limit, rate_limit, concurrency keys and fair share hold as for a claim of that queue alone. '
      + 'A queue-scoped key must reach every named queue (403 naming the first it may not use). With wait_ms the claim waits for a job on any of them.',
  })),
  worker_id: WorkerId,
  limit: Type.Optional(Type.Integer({ description: `clamped to 1..${LIMITS.claimLimitMax}; default 1` })),
  lease_duration_secs: Type.Optional(LeaseSeconds),
  wait_ms: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: LIMITS.waitMsMax,
    description: 'extension (long poll): when nothing is due, wait up to this long for a job to arrive instead of answering [] at once. Default 0.',
  })),
});
type ClaimBody = Static<typeof ClaimBody>;

const CompleteBody = Type.Object({ worker_id: WorkerId, result: Type.Optional(Type.Unknown()), lease_id: LeaseId });
type CompleteBody = Static<typeof CompleteBody>;
const FailBody = Type.Object({ worker_id: WorkerId, error: ErrorText, lease_id: LeaseId, retryable: Retryable });
type FailBody = Static<typeof FailBody>;
const HeartbeatBody = Type.Object({ worker_id: WorkerId, lease_duration_secs: Type.Optional(LeaseSeconds), lease_id: LeaseId });
type HeartbeatBody = Static<typeof HeartbeatBody>;
const SnoozeBody = Type.Object({
  worker_id: WorkerId,
  lease_id: LeaseId,
  delay_secs: Type.Integer({
    minimum: LIMITS.snoozeSecondsMin,
    maximum: LIMITS.snoozeSecondsMax,
    description: `seconds until the job may be claimed again, ${LIMITS.snoozeSecondsMin}..${LIMITS.snoozeSecondsMax}`,
  }),
});
type SnoozeBody = Static<typeof SnoozeBody>;

const BATCH_MAX = 1000;
const BatchCompleteBody = Type.Object({
  worker_id: WorkerId,
  items: Type.Array(Type.Object({ job_id: Type.String(), lease_id: LeaseId, result: Type.Optional(Type.Unknown()) }), { minItems: 1, maxItems: BATCH_MAX }),
});
type BatchCompleteBody = Static<typeof BatchCompleteBody>;
const BatchFailBody = Type.Object({
  worker_id: WorkerId,
  items: Type.Array(Type.Object({ job_id: Type.String(), lease_id: LeaseId, error: ErrorText, retryable: Retryable }), { minItems: 1, maxItems: BATCH_MAX }),
});
type BatchFailBody = Static<typeof BatchFailBody>;

const Success = Type.Object({ success: Type.Boolean() });
const FailResult = Type.Object({
  success: Type.Boolean(),
  will_retry: Type.Boolean({ description: 'extension: the job went back to pending for another attempt' }),
  status: Type.String({ description: 'extension: the job status after the failure (pending, deadletter or cancelled)' }),
});
const SnoozeResult = Type.Object({
  success: Type.Boolean(),
  status: Type.String({ description: 'pending (waits until scheduled_at), or cancelled when a cancel had been requested' }),
  scheduled_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when the job becomes claimable again; null when it ended cancelled' }),
  retry_count: Type.Integer({ description: 'unchanged: a snooze uses no attempt' }),
});
const HeartbeatResult = Type.Object({
  success: Type.Boolean(),
  cancel_requested: Type.Boolean({ description: 'extension: cancellation was requested; stop and report back' }),
  lease_expires_at: Type.String({ format: 'date-time', description: 'extension: the new lease expiry (never past deadline_at)' }),
  deadline_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'extension: when this attempt times out (an enforced timeout: set on the job, its schedule or its queue\'s config), else null. Past it, heartbeats and the completion are refused (details.timed_out) and the server fails the attempt as timed out',
  }),
  timed_out: Type.Boolean({ description: 'extension: always false in a success; a heartbeat after the deadline is refused with details.timed_out = true' }),
});
const BatchResult = Type.Object({
  results: Type.Array(Type.Object({
    job_id: Type.String(),
    success: Type.Boolean(),
    will_retry: Type.Optional(Type.Boolean()),
    error: Type.Optional(Type.String({ description: 'job_not_found_or_not_owned | lease_expired | duplicate_job_id' })),
  })),
});

const NOT_OWNED = 'job_not_found_or_not_owned';

/**
 * The contract's answer for a fenced operation that changed nothing: 404 not
 * owned, 409 stale lease. An attempt that timed out is a lost lease: 409
 * LEASE_EXPIRED when the worker sent its lease_id, else the 404; either way
 * `details.timed_out` says why (extension).
 */
export function refuse(reply: FastifyReply, reason: FenceFailure, jobId: string, leaseSent: boolean): FastifyReply {
  const timedOut = reason === 'timed_out';
  if (reason === 'lease_mismatch' || (timedOut && leaseSent)) {
    const message = timedOut
      ? 'Lease expired: the attempt timed out (it outlived its timeout_seconds) and the server fails it'
      : 'Lease expired: this lease_id is no longer the job\'s current lease';
    return reply.code(409).send({ success: false, ...errorBody('LEASE_EXPIRED', message, timedOut ? { job_id: jobId, timed_out: true } : { job_id: jobId }) });
  }
  return reply.code(404).send({
    success: false,
    error: NOT_OWNED,
    code: 'NOT_FOUND',
    message: timedOut
      ? 'Job not processing for this worker: the attempt timed out (it outlived its timeout_seconds) and the server fails it'
      : 'Job not found, not processing, or not assigned to this worker',
    details: timedOut ? { job_id: jobId, timed_out: true } : { job_id: jobId },
  });
}

function checkResultSize(result: unknown, field: string): void {
  if (result !== undefined && jsonBytes(result) > LIMITS.payloadBytesMax) {
    throw new PayloadTooLargeError(`${field} exceeds ${LIMITS.payloadBytesMax} bytes`, { field, limit: LIMITS.payloadBytesMax });
  }
}

/**
 * Items after the first with the same job id are answered as duplicates (one
 * job, one outcome); jobs of queues the key may not use are answered as not
 * owned, like another organization's, and never reach the engine.
 */
async function splitBatch<T extends { job_id: string }>(grant: Grant, ctx: AppContext, items: T[]): Promise<{ unique: T[]; duplicates: Set<number>; outOfReach: Set<number> }> {
  const seen = new Set<string>();
  const duplicates = new Set<number>();
  const outOfReach = new Set<number>();
  const forbidden = await grant.jobsOutOfReach(ctx.db, items.map((item) => item.job_id));
  const unique: T[] = [];
  items.forEach((item, index) => {
    const key = item.job_id.toLowerCase();
    if (seen.has(key)) duplicates.add(index);
    else if (forbidden.has(key)) {
      seen.add(key);
      outOfReach.add(index);
    } else {
      seen.add(key);
      unique.push(item);
    }
  });
  return { unique, duplicates, outOfReach };
}

const fenceError = (reason: FenceFailure, leaseSent: boolean) => (reason === 'lease_mismatch' || (reason === 'timed_out' && leaseSent) ? 'lease_expired' : NOT_OWNED);

/** The worker protocol (docs/compatibility.md §3.4, §6) and its batch and long-poll extensions. */
export function jobWorkerRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Body: ClaimBody }>('/jobs/claim', {
    config: { operation: 'job.claim', addresses: 'body_queues' },
    schema: {
      tags: ['worker'],
      summary: 'Lease up to `limit` due jobs of a queue, or of several ({ jobs: [] } when none)',
      description: 'Name the queue in `queue_name`, or several in `queue_names` (extension): exactly one of the two, else a 400. '
        + '`wait_ms` is a Spool extension: a long poll woken by LISTEN/NOTIFY, one waiting claim per new job notification.',
      body: ClaimBody,
      response: { 200: Type.Object({ jobs: Type.Array(JobSchema) }) },
    },
  }, async (request, reply) => {
    const auth = grantOf(request).auth;
    const body = request.body;
    if ((body.queue_name === undefined) === (body.queue_names === undefined)) {
      throw new ValidationError(body.queue_name === undefined
        ? 'queue_name is required (or queue_names, to claim from several queues)'
        : 'queue_name and queue_names cannot both be given: name one queue or several', { field: body.queue_name === undefined ? 'queue_name' : 'queue_names' });
    }
    const queues = body.queue_names ?? [body.queue_name!];
    const startTime = ctx.tracing ? Date.now() : 0;
    // The contract clamps these; the Warning header says when it did.
    const limit = contractInt(reply, 'limit', body.limit, 1, 1, LIMITS.claimLimitMax);
    const leaseSeconds = contractInt(reply, 'lease_duration_secs', body.lease_duration_secs, LIMITS.leaseSecondsDefault, LIMITS.leaseSecondsMin, LIMITS.leaseSecondsMax);
    // One queue, whichever field named it, is the single-queue claim.
    const claim = () => ctx.metrics.timeClaim(() => queues.length === 1
      ? jobClaimOutcome(ctx.db, { organizationId: auth.organizationId, queueName: queues[0]!, workerId: body.worker_id, limit, leaseSeconds })
      : jobClaimQueuesOutcome(ctx.db, { organizationId: auth.organizationId, queueNames: queues, workerId: body.worker_id, limit, leaseSeconds }));
    const spanQueue = queues.join(',');
    const waitMs = body.wait_ms ?? 0;
    const controller = new AbortController();
    // A client that hung up must not be handed jobs it will never see.
    const onClose = () => {
      if (!reply.raw.writableEnded) controller.abort();
    };
    if (waitMs > 0) reply.raw.once('close', onClose);
    try {
      const key = queues.length === 1 ? ClaimWaiters.key(auth.organizationId, queues[0]!) : queues.map((queue) => ClaimWaiters.key(auth.organizationId, queue));
      const keyOf = (job: { queue_name: string }) => ClaimWaiters.key(auth.organizationId, job.queue_name);
      const claimed = claimWithWait(ctx.claimWaiters, { key, keyOf, waitMs, limit, signal: controller.signal }, claim);
      const tracing = ctx.tracing;
      const jobs = await (tracing ? claimed.catch((err: unknown) => {
        recordClaimSpan(tracing, { queue: spanQueue, organizationId: auth.organizationId, workerId: body.worker_id, parent: parentTraceHeaders(request.headers), startTime, jobs: [], error: err });
        throw err;
      }) : claimed);
      ctx.metrics.observeClaimed(jobs);
      if (ctx.tracing) recordClaimSpan(ctx.tracing, { queue: spanQueue, organizationId: auth.organizationId, workerId: body.worker_id, parent: parentTraceHeaders(request.headers), startTime, jobs });
      return { jobs: jobs.map(jobToWire) };
    } finally {
      reply.raw.off('close', onClose);
    }
  });

  app.post<{ Params: { id: string }; Body: CompleteBody }>('/jobs/:id/complete', {
    config: { operation: 'job.complete', addresses: 'job' },
    schema: {
      tags: ['worker'],
      summary: 'Complete a job this worker holds (404 not owned, 409 LEASE_EXPIRED for a stale lease)',
      params: IdParams,
      body: CompleteBody,
      response: { 200: Success },
    },
  }, async (request, reply) => {
    const { organizationId } = grantOf(request);
    // Ids are compared as text in places: one canonical spelling.
    const id = request.params.id.toLowerCase();
    checkResultSize(request.body.result, 'result');
    const trace = ctx.tracing ? startSettleTrace(ctx.tracing, ctx.db, { operation: 'complete', organizationId, workerId: request.body.worker_id, ids: [id], parent: parentTraceHeaders(request.headers) }) : null;
    const outcome = await endOnFailure(ctx.completeBatcher.complete(organizationId, { id, workerId: request.body.worker_id, leaseId: request.body.lease_id, result: request.body.result }), trace);
    trace?.end(outcome.ok ? 1 : 0);
    ctx.metrics.observeCompletedOutcomes(organizationId, [outcome]);
    if (!outcome.ok) return refuse(reply, outcome.reason, id, request.body.lease_id != null);
    return { success: true };
  });

  app.post<{ Params: { id: string }; Body: FailBody }>('/jobs/:id/fail', {
    config: { operation: 'job.fail', addresses: 'job' },
    schema: {
      tags: ['worker'],
      summary: 'Report a failure: back to pending with backoff while retries remain, else dead-lettered',
      params: IdParams,
      body: FailBody,
      response: { 200: FailResult },
    },
  }, async (request, reply) => {
    const { organizationId } = grantOf(request);
    // Ids are compared as text in places: one canonical spelling.
    const id = request.params.id.toLowerCase();
    const body = request.body;
    const trace = ctx.tracing ? startSettleTrace(ctx.tracing, ctx.db, { operation: 'fail', organizationId, workerId: body.worker_id, ids: [id], parent: parentTraceHeaders(request.headers) }) : null;
    const [outcome] = await endOnFailure(jobFailMany(ctx.db, organizationId, [{ id, workerId: body.worker_id, leaseId: body.lease_id, error: body.error, retryable: body.retryable }]), trace);
    trace?.end(outcome!.ok ? 1 : 0);
    if (!outcome!.ok) return refuse(reply, outcome!.reason, id, body.lease_id != null);
    return { success: true, will_retry: outcome!.willRetry, status: outcome!.status };
  });

  app.post<{ Params: { id: string }; Body: SnoozeBody }>('/jobs/:id/snooze', {
    // A worker's report on the job it holds, like a failure: the same permission.
    config: { operation: 'job.fail', addresses: 'job' },
    schema: {
      tags: ['worker', 'extension'],
      summary: 'Extension: put a job this worker holds off for delay_secs without using an attempt',
      description: 'Spool extension. The job goes back to pending, claimable again after delay_secs (1..86400), with retry_count unchanged, lease and worker cleared, and a `snooze` history event. Fenced like complete and fail: 404 job_not_found_or_not_owned for another worker or an unknown job, 409 LEASE_EXPIRED for a stale lease_id, and after an enforced timeout\'s deadline refused with details.timed_out = true. A job whose cancellation was requested ends cancelled instead (status: cancelled).',
      params: IdParams,
      body: SnoozeBody,
      response: { 200: SnoozeResult },
    },
  }, async (request, reply) => {
    const { organizationId } = grantOf(request);
    // Ids are compared as text in places: one canonical spelling.
    const id = request.params.id.toLowerCase();
    const body = request.body;
    const outcome = await jobSnooze(ctx.db, { organizationId, id, workerId: body.worker_id, leaseId: body.lease_id, delaySecs: body.delay_secs });
    if (!outcome.ok) return refuse(reply, outcome.reason, id, body.lease_id != null);
    return { success: true, status: outcome.status, scheduled_at: outcome.scheduledAt?.toISOString() ?? null, retry_count: outcome.retryCount };
  });

  app.post<{ Params: { id: string }; Body: HeartbeatBody }>('/jobs/:id/heartbeat', {
    config: { operation: 'job.heartbeat', addresses: 'job' },
    schema: {
      tags: ['worker'],
      summary: 'Extend the lease on a job this worker holds',
      description: 'The answer also says whether cancellation was requested and when the attempt times out (extensions). After an enforced timeout\'s deadline the heartbeat is refused (409 LEASE_EXPIRED with the lease_id, else 404) with details.timed_out = true.',
      params: IdParams,
      body: HeartbeatBody,
      response: { 200: HeartbeatResult },
    },
  }, async (request, reply) => {
    const { organizationId } = grantOf(request);
    // Ids are compared as text in places: one canonical spelling.
    const id = request.params.id.toLowerCase();
    const body = request.body;
    const outcome = await jobHeartbeat(ctx.db, {
      organizationId, id, workerId: body.worker_id, leaseId: body.lease_id,
      leaseSeconds: contractInt(reply, 'lease_duration_secs', body.lease_duration_secs, LIMITS.leaseSecondsDefault, LIMITS.leaseSecondsMin, LIMITS.leaseSecondsMax),
    });
    if (!outcome.ok) return refuse(reply, outcome.reason, id, body.lease_id != null);
    return {
      success: true,
      cancel_requested: outcome.cancelRequested,
      lease_expires_at: outcome.leaseExpiresAt.toISOString(),
      deadline_at: outcome.deadlineAt?.toISOString() ?? null,
      timed_out: false,
    };
  });

  app.post<{ Body: BatchCompleteBody }>('/jobs/complete', {
    config: { operation: 'job.complete' },
    schema: {
      tags: ['worker', 'extension'],
      summary: 'Extension: complete up to 1000 jobs in one statement',
      description: 'Spool extension. Each item is fenced like POST /jobs/{id}/complete; one result per item, in order.',
      body: BatchCompleteBody,
      response: { 200: BatchResult },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const { organizationId } = grant;
    const { worker_id: workerId, items } = request.body;
    items.forEach((item, i) => checkResultSize(item.result, `items[${i}].result`));
    const { unique, duplicates, outOfReach } = await splitBatch(grant, ctx, items);
    const trace = ctx.tracing ? startSettleTrace(ctx.tracing, ctx.db, { operation: 'complete', organizationId, workerId, ids: unique.map((item) => item.job_id), parent: parentTraceHeaders(request.headers) }) : null;
    const outcomes = await endOnFailure(jobCompleteMany(ctx.db, organizationId, unique.map((item) => ({ id: item.job_id.toLowerCase(), workerId, leaseId: item.lease_id, result: item.result }))), trace);
    trace?.end(outcomes.filter((o) => o.ok).length);
    ctx.metrics.observeCompletedOutcomes(organizationId, outcomes);
    const byId = new Map(outcomes.map((o) => [o.id.toLowerCase(), o]));
    return {
      results: items.map((item, index) => {
        if (duplicates.has(index)) return { job_id: item.job_id, success: false, error: 'duplicate_job_id' };
        if (outOfReach.has(index)) return { job_id: item.job_id, success: false, error: NOT_OWNED };
        const outcome = byId.get(item.job_id.toLowerCase())!;
        return outcome.ok ? { job_id: item.job_id, success: true } : { job_id: item.job_id, success: false, error: fenceError(outcome.reason, item.lease_id != null) };
      }),
    };
  });

  app.post<{ Body: BatchFailBody }>('/jobs/fail', {
    config: { operation: 'job.fail' },
    schema: {
      tags: ['worker', 'extension'],
      summary: 'Extension: fail up to 1000 jobs in one statement',
      description: 'Spool extension. Each item is fenced like POST /jobs/{id}/fail; one result per item, in order.',
      body: BatchFailBody,
      response: { 200: BatchResult },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const { organizationId } = grant;
    const { worker_id: workerId, items } = request.body;
    const { unique, duplicates, outOfReach } = await splitBatch(grant, ctx, items);
    const trace = ctx.tracing ? startSettleTrace(ctx.tracing, ctx.db, { operation: 'fail', organizationId, workerId, ids: unique.map((item) => item.job_id), parent: parentTraceHeaders(request.headers) }) : null;
    const outcomes = await endOnFailure(jobFailMany(ctx.db, organizationId, unique.map((item) => ({
      id: item.job_id.toLowerCase(), workerId, leaseId: item.lease_id, error: item.error, retryable: item.retryable,
    }))), trace);
    trace?.end(outcomes.filter((o) => o.ok).length);
    const byId = new Map(outcomes.map((o) => [o.id.toLowerCase(), o]));
    return {
      results: items.map((item, index) => {
        if (duplicates.has(index)) return { job_id: item.job_id, success: false, error: 'duplicate_job_id' };
        if (outOfReach.has(index)) return { job_id: item.job_id, success: false, error: NOT_OWNED };
        const outcome = byId.get(item.job_id.toLowerCase())!;
        return outcome.ok
          ? { job_id: item.job_id, success: true, will_retry: outcome.willRetry }
          : { job_id: item.job_id, success: false, error: fenceError(outcome.reason, item.lease_id != null) };
      }),
    };
  });
}
