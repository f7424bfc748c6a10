import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { clamp, LIMITS, PayloadTooLargeError, ValidationError } from '@spool/protocol';
import { workerDeregister, workerHeartbeat, workerRegister } from '@spool/engine';
import type { Grant } from '../authorization.js';
import { withinPlanLimit } from '../http/plan-limits.js';
import { jsonBytes } from '../wire/common.js';
import { unary, type GrpcContext } from './call.js';
import { checkQueueName, checkWorkerId, GRPC_DEFAULT_LEASE_SECONDS, optionalString } from './validate.js';

/* WorkerService (docs/compatibility.md §5). Unknown workers (any id string) are answered OK with false, never an error. */

/** Seconds between worker heartbeats we ask for; must be a positive integer (clients setInterval with it). */
const HEARTBEAT_INTERVAL_SECS = 10;
const HOSTNAME_PATTERN = /^[A-Za-z0-9._-]{1,255}$/;
const SHORT_TEXT_MAX = 50;
const WORKER_STATUSES = ['healthy', 'degraded', 'draining'] as const;

interface RegisterWorkerRequest {
  queue_name: string;
  hostname: string;
  worker_type: string;
  max_concurrency: number;
  version: string;
  metadata: Record<string, string>;
}

interface HeartbeatRequest {
  worker_id: string;
  current_jobs: number;
  status: string;
  metadata: Record<string, string>;
}

function shortText(value: string, field: string): string | null {
  const text = optionalString(value);
  if (text && text.length > SHORT_TEXT_MAX) throw new ValidationError(`${field} must be at most ${SHORT_TEXT_MAX} characters`, { field });
  return text;
}

function metadataOf(map: Record<string, string> | null | undefined): Record<string, unknown> | null {
  if (!map || Object.keys(map).length === 0) return null;
  if (jsonBytes(map) > LIMITS.tagsBytesMax) throw new PayloadTooLargeError(`metadata exceeds ${LIMITS.tagsBytesMax} bytes`, { field: 'metadata' });
  return map;
}

/** Registers a worker for a queue; returns its id with the lease and heartbeat periods to use. */
export async function register(ctx: GrpcContext, grant: Grant, request: RegisterWorkerRequest) {
  const queueName = checkQueueName(request.queue_name);
  const hostname = optionalString(request.hostname) ?? 'unknown';
  if (!HOSTNAME_PATTERN.test(hostname)) {
    throw new ValidationError("hostname must be 1-255 letters, digits, '.', '-' or '_'", { field: 'hostname' });
  }
  const worker = {
    organizationId: grant.organizationId,
    queueName,
    hostname,
    workerType: shortText(request.worker_type, 'worker_type'),
    maxConcurrency: request.max_concurrency <= 0 ? 5 : clamp(Math.trunc(request.max_concurrency), 1, 1000),
    metadata: metadataOf(request.metadata),
    version: shortText(request.version, 'version'),
  };
  grant.queue(queueName);
  // As REST: a restart registering the same hostname and queue is not another worker.
  const { id } = await withinPlanLimit(ctx, grant.auth, 'workers', (db) => workerRegister(db, worker), { worker: { hostname, queueName } });
  return { worker_id: id, lease_duration_secs: GRPC_DEFAULT_LEASE_SECONDS, heartbeat_interval_secs: HEARTBEAT_INTERVAL_SECS };
}

/** Records a heartbeat; `acknowledged: false` for an unknown worker. */
export async function heartbeat(ctx: GrpcContext, grant: Grant, request: HeartbeatRequest) {
  const id = checkWorkerId(request.worker_id);
  // A worker of queues out of the key's reach is answered like an unknown one.
  if (!(await grant.workerInReach(ctx.db, id))) return { acknowledged: false, should_drain: false };
  const status = (WORKER_STATUSES as readonly string[]).includes(request.status) ? (request.status as (typeof WORKER_STATUSES)[number]) : 'healthy';
  const worker = await workerHeartbeat(ctx.db, {
    organizationId: grant.organizationId,
    id,
    currentJobs: clamp(Math.trunc(request.current_jobs) || 0, 0, 100_000),
    status,
    metadata: metadataOf(request.metadata),
  });
  return { acknowledged: worker !== null, should_drain: false };
}

/** Marks the worker offline and returns its processing jobs to pending; `success: false` when unknown. */
export async function deregister(ctx: GrpcContext, grant: Grant, request: { worker_id: string }) {
  const id = checkWorkerId(request.worker_id);
  if (!(await grant.workerInReach(ctx.db, id))) return { success: false };
  return { success: (await workerDeregister(ctx.db, grant.organizationId, id)) !== null };
}

/** The WorkerService implementation for grpc-js. */
export function workerService(ctx: GrpcContext): UntypedServiceImplementation {
  return {
    Register: unary<RegisterWorkerRequest, unknown>(ctx, 'Register', 'worker.register', (grant, request) => register(ctx, grant, request)),
    Heartbeat: unary<HeartbeatRequest, unknown>(ctx, 'Heartbeat', 'worker.heartbeat', (grant, request) => heartbeat(ctx, grant, request)),
    Deregister: unary<{ worker_id: string }, unknown>(ctx, 'Deregister', 'worker.deregister', (grant, request) => deregister(ctx, grant, request)),
  };
}
