import type { ServerDuplexStream, ServerWritableStream } from '@grpc/grpc-js';
import { ClaimWaiters, claimWithWait } from '../claim-waiters.js';
import { authorize, type Grant, type LiveAuthorization } from '../authorization.js';
import { authorizeStream, canonicalizeCallIds, type GrpcContext } from './call.js';
import { jobToProto, type ProtoJob } from './convert.js';
import { statusName, toGrpcFailure, toServiceError } from './errors.js';
import {
  claimJobs,
  complete,
  dequeueParams,
  fail,
  renewLease,
  type CompleteRequest,
  type DequeueRequest,
  type FailRequest,
  type RenewLeaseRequest,
} from './queue-service.js';

/*
 * The two streaming worker methods. Both authenticate once at call start,
 * wait for jobs through the process's claim waiters (woken by `spool_jobs`
 * notifications, shared with REST long polls) instead of sleeping, and end
 * with an OK status when the server shuts down.
 */

/** Longest idle wait between claim attempts. Notifications usually cut it short; the
 *  poll still finds jobs nothing announces (a retry whose backoff has elapsed). */
const IDLE_POLL_MS = 1_000;
/** Most jobs StreamJobs claims in one statement while a backlog lasts (they are sent one message each). */
const STREAM_BATCH_MAX = 16;
/** How long a ProcessJobs `dequeue` waits for a job before answering NO_JOBS. */
const PROCESS_DEQUEUE_WAIT_MS = 1_000;
/** Inbound ProcessJobs requests buffered before reading pauses (HTTP/2 flow control takes over). */
const INBOX_HIGH_WATER = 64;

interface StreamJobsRequest {
  queue_name: string;
  worker_id: string;
  lease_duration_secs: number;
}

interface ProcessRequest {
  request?: string;
  dequeue: DequeueRequest | null;
  complete: CompleteRequest | null;
  fail: FailRequest | null;
  renew_lease: RenewLeaseRequest | null;
}

type ProcessResponse = Record<string, unknown>;

/** An abort signal for one call: the client went away or the server is stopping. */
function callSignal(ctx: GrpcContext, call: { on(event: 'cancelled', fn: () => void): unknown; cancelled: boolean }): AbortSignal {
  const cancelled = new AbortController();
  if (call.cancelled) cancelled.abort();
  call.on('cancelled', () => cancelled.abort());
  return AbortSignal.any([cancelled.signal, ctx.shutdown]);
}

/** Resolves when the writable side drains (backpressure) or the call ends. */
function drained(call: NodeJS.EventEmitter, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    call.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

function endWithError(ctx: GrpcContext, call: NodeJS.EventEmitter & { cancelled: boolean }, err: unknown, method: string): void {
  if (!call.cancelled) call.emit('error', toServiceError(toGrpcFailure(err, ctx.logger, method)));
}

/**
 * StreamJobs: claim, send, repeat; when none is due, wait for a wake-up (at
 * most IDLE_POLL_MS). Jobs are claimed only as fast as the client reads
 * (backpressure); during a backlog several are claimed per statement. A job
 * claimed for a client that disconnected before it arrived is recovered by
 * the lease reaper when its lease expires.
 */
export function streamJobs(ctx: GrpcContext) {
  return (call: ServerWritableStream<StreamJobsRequest, ProtoJob>): void => {
    void runStreamJobs(ctx, call);
  };
}

async function runStreamJobs(ctx: GrpcContext, call: ServerWritableStream<StreamJobsRequest, ProtoJob>): Promise<void> {
  const signal = callSignal(ctx, call);
  let live: LiveAuthorization;
  let params: ReturnType<typeof dequeueParams>;
  try {
    live = await authorizeStream(ctx, call.metadata);
    params = dequeueParams(authorize(live.last, 'job.claim'), call.request);
  } catch (err) {
    return endWithError(ctx, call, err, 'StreamJobs');
  }
  try {
    const key = ClaimWaiters.key(live.last.organizationId, params.queueName);
    let batch = 1;
    while (!signal.aborted) {
      const limit = batch;
      // The key is read again while the stream lasts: a revoked or narrowed key stops it (UNAUTHENTICATED, PERMISSION_DENIED).
      const grant = await live.grant('job.claim');
      grant.queue(params.queueName);
      const rows = await claimWithWait(ctx.claimWaiters, { key, waitMs: IDLE_POLL_MS, limit, signal }, () =>
        claimJobs(ctx, grant, params.queueName, params.workerId, limit, params.lease));
      if (rows.length === 0) {
        // Closed waiters answer at once: the process is stopping, so stop too rather than spin.
        if (ctx.claimWaiters.closed) break;
        batch = 1;
        continue;
      }
      // A full batch means a backlog: claim more per round trip, up to STREAM_BATCH_MAX.
      batch = rows.length === batch ? Math.min(batch * 2, STREAM_BATCH_MAX) : 1;
      let writable = true;
      for (const row of rows) writable = call.write(jobToProto(row));
      if (call.cancelled) break;
      if (!writable) await drained(call, signal);
    }
    if (!call.cancelled) call.end();
  } catch (err) {
    endWithError(ctx, call, err, 'StreamJobs');
  }
}

/**
 * ProcessJobs: one response per request, in request order. A `dequeue` that
 * finds nothing waits up to PROCESS_DEQUEUE_WAIT_MS for a wake-up, cut short
 * as soon as the client sends anything else, then answers NO_JOBS.
 */
export function processJobs(ctx: GrpcContext) {
  return (call: ServerDuplexStream<ProcessRequest, ProcessResponse>): void => {
    void runProcessJobs(ctx, call);
  };
}

async function runProcessJobs(ctx: GrpcContext, call: ServerDuplexStream<ProcessRequest, ProcessResponse>): Promise<void> {
  const signal = callSignal(ctx, call);
  const inbox: ProcessRequest[] = [];
  let ended = false;
  let arrived: (() => void) | null = null;
  const poke = () => {
    const fn = arrived;
    arrived = null;
    fn?.();
  };
  call.on('data', (request: ProcessRequest) => {
    inbox.push(request);
    if (inbox.length >= INBOX_HIGH_WATER) call.pause();
    poke();
  });
  call.on('end', () => {
    ended = true;
    poke();
  });
  signal.addEventListener('abort', poke, { once: true });
  const nextArrival = () => new Promise<void>((resolve) => (arrived = resolve));

  let live: LiveAuthorization;
  try {
    live = await authorizeStream(ctx, call.metadata);
  } catch (err) {
    return endWithError(ctx, call, err, 'ProcessJobs');
  }
  try {
    for (;;) {
      const request = inbox.shift();
      if (!request) {
        if (ended || signal.aborted) break;
        await nextArrival();
        continue;
      }
      if (inbox.length < INBOX_HIGH_WATER / 2 && call.isPaused()) call.resume();
      const interrupt = new AbortController();
      const interruptOn = AbortSignal.any([signal, interrupt.signal]);
      arrived = () => interrupt.abort();
      // A key revoked while the stream is open ends it (UNAUTHENTICATED).
      await live.current();
      const response = await processOne(ctx, live, request, interruptOn, () => inbox.length > 0 || ended);
      arrived = null;
      if (call.cancelled) return;
      if (!call.write(response)) await drained(call, signal);
    }
    if (!call.cancelled) call.end();
  } catch (err) {
    endWithError(ctx, call, err, 'ProcessJobs');
  }
}

/** Answers one ProcessRequest; failures become an ErrorResponse, never a broken stream. */
async function processOne(ctx: GrpcContext, live: LiveAuthorization, request: ProcessRequest, interrupt: AbortSignal, busy: () => boolean): Promise<ProcessResponse> {
  const kind = request.request ?? (['dequeue', 'complete', 'fail', 'renew_lease'] as const).find((key) => request[key] != null);
  const grant = (operation: Parameters<typeof authorize>[1]) => authorize(live.last, operation);
  try {
    switch (kind) {
      case 'dequeue': {
        if (ctx.shutdown.aborted) return { error: { code: 'UNAVAILABLE', message: 'Server is shutting down' } };
        const job = await dequeueOne(ctx, grant('job.claim'), request.dequeue!, interrupt, busy);
        return job ? { job } : { error: { code: 'NO_JOBS', message: 'No jobs available' } };
      }
      // The unary calls' ids are canonicalized in call.ts; a stream's messages are not unary calls.
      case 'complete':
        return { complete: await complete(ctx, grant('job.complete'), canonicalizeCallIds(request.complete!)) };
      case 'fail':
        return { fail: await fail(ctx, grant('job.fail'), canonicalizeCallIds(request.fail!)) };
      case 'renew_lease':
        return { renew_lease: await renewLease(ctx, grant('job.heartbeat'), canonicalizeCallIds(request.renew_lease!)) };
      default:
        return { error: { code: 'INVALID_REQUEST', message: 'Empty request: set one of dequeue, complete, fail, renew_lease' } };
    }
  } catch (err) {
    const failure = toGrpcFailure(err, ctx.logger, `ProcessJobs.${kind}`);
    return { error: { code: statusName(failure.code), message: failure.details } };
  }
}

async function dequeueOne(ctx: GrpcContext, grant: Grant, request: DequeueRequest, interrupt: AbortSignal, busy: () => boolean): Promise<ProtoJob | null> {
  const params = dequeueParams(grant, { ...request, batch_size: 1 });
  const key = ClaimWaiters.key(grant.organizationId, params.queueName);
  const waitMs = busy() ? 0 : PROCESS_DEQUEUE_WAIT_MS;
  const [row] = await claimWithWait(ctx.claimWaiters, { key, waitMs, limit: 1, signal: interrupt }, () =>
    claimJobs(ctx, grant, params.queueName, params.workerId, 1, params.lease));
  return row ? jobToProto(row) : null;
}
