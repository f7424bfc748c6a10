import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { LIMITS, NotFoundError, PayloadTooLargeError } from '@spool/protocol';
import { workerDeregister, workerGet, workerHeartbeat, workerList, workerRegister, type WorkerStatus } from '@spool/engine';
import type { AppContext } from '../app.js';
import { workerQueues, type Grant } from '../authorization.js';
import { grantOf } from '../http/route-authorization.js';
import { withinPlanLimit } from '../http/plan-limits.js';
import { IdParams, QueueName, jsonBytes, nullable } from '../wire/common.js';
import { WorkerSchema, WorkerSummarySchema, workerSummaryToWire, workerToWire } from '../wire/worker.js';

/** What a registered worker is told (docs/compatibility.md §3.8, §6: heartbeat_interval_secs must be a positive integer). */
export const WORKER_LEASE_SECONDS = LIMITS.leaseSecondsDefault;
export const WORKER_HEARTBEAT_SECONDS = 10;

const Metadata = Type.Record(Type.String(), Type.Unknown());

const RegisterBody = Type.Object({
  queue_name: QueueName,
  hostname: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._-]+$' }),
  worker_type: Type.Optional(nullable(Type.String({ maxLength: 50 }))),
  max_concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'contract range 1..100; Spool accepts up to 1000 (extension); default 5' })),
  metadata: Type.Optional(nullable(Metadata)),
  version: Type.Optional(nullable(Type.String({ maxLength: 50 }))),
  queue_names: Type.Optional(Type.Array(QueueName, { maxItems: 50, description: 'extension: further queues this worker serves' })),
});
type RegisterBody = Static<typeof RegisterBody>;

const HeartbeatBody = Type.Object({
  current_jobs: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
  status: Type.Optional(Type.String({ description: 'healthy | degraded | draining; anything else counts as healthy' })),
  metadata: Type.Optional(nullable(Metadata)),
});
type HeartbeatBody = Static<typeof HeartbeatBody>;

const HEARTBEAT_STATUSES = new Set(['healthy', 'degraded', 'draining']);

function checkMetadata(metadata: unknown): void {
  if (metadata != null && jsonBytes(metadata) > LIMITS.tagsBytesMax) {
    throw new PayloadTooLargeError(`metadata exceeds ${LIMITS.tagsBytesMax} bytes`, { field: 'metadata' });
  }
}

const notFound = (id: string) => new NotFoundError('Worker not found', { worker_id: id });

/** 404 unless the worker is within the key's reach (all of its queues, to act for it). */
async function workerInReach(ctx: AppContext, grant: Grant, id: string): Promise<void> {
  if (!(await grant.workerInReach(ctx.db, id))) throw notFound(id);
}

/** Workers (docs/compatibility.md §3.8). */
export function workerRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Body: RegisterBody }>('/workers/register', {
    config: { operation: 'worker.register' },
    schema: {
      tags: ['workers'],
      summary: 'Register a worker (201)',
      body: RegisterBody,
      response: {
        201: Type.Object({ id: Type.String(), queue_name: Type.String(), lease_duration_secs: Type.Integer(), heartbeat_interval_secs: Type.Integer() }),
      },
    },
  }, async (request, reply) => {
    const grant = grantOf(request);
    const body = request.body;
    grant.queues([body.queue_name, ...(body.queue_names ?? [])]);
    checkMetadata(body.metadata);
    // A worker registering again with the same hostname and queue (a restart) is not another worker.
    const identity = { hostname: body.hostname, queueName: body.queue_name };
    const worker = await withinPlanLimit(ctx, grant.auth, 'workers', (db) => workerRegister(db, {
      organizationId: grant.organizationId,
      queueName: body.queue_name,
      queueNames: (body.queue_names ?? []).filter((q) => q !== body.queue_name),
      hostname: body.hostname,
      workerType: body.worker_type || null,
      maxConcurrency: body.max_concurrency ?? 5,
      metadata: body.metadata ?? null,
      version: body.version || null,
    }), { worker: identity });
    return reply.code(201).send({
      id: worker.id,
      queue_name: worker.queue_name,
      lease_duration_secs: WORKER_LEASE_SECONDS,
      heartbeat_interval_secs: WORKER_HEARTBEAT_SECONDS,
    });
  });

  app.get('/workers', {
    config: { operation: 'worker.read' },
    schema: { tags: ['workers'], summary: 'Workers, most recent heartbeat first (at most 100)', response: { 200: Type.Array(WorkerSummarySchema) } },
  }, async (request) => {
    const grant = grantOf(request);
    return (await workerList(ctx.db, grant.organizationId, 100, grant.queueFilter)).map(workerSummaryToWire);
  });

  app.get<{ Params: { id: string } }>('/workers/:id', {
    config: { operation: 'worker.read' },
    schema: { tags: ['workers'], summary: 'A worker', params: IdParams, response: { 200: WorkerSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    const worker = grant.object(await workerGet(ctx.db, grant.organizationId, request.params.id), workerQueues, () => notFound(request.params.id));
    return workerToWire(worker);
  });

  app.post<{ Params: { id: string }; Body: HeartbeatBody }>('/workers/:id/heartbeat', {
    config: { operation: 'worker.heartbeat' },
    schema: {
      tags: ['workers'],
      summary: 'Worker heartbeat',
      params: IdParams,
      body: HeartbeatBody,
      response: { 200: Type.Object({ acknowledged: Type.Boolean(), should_drain: Type.Boolean() }) },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const body = request.body;
    checkMetadata(body.metadata);
    await workerInReach(ctx, grant, request.params.id);
    const status = (HEARTBEAT_STATUSES.has(body.status ?? '') ? body.status : 'healthy') as Exclude<WorkerStatus, 'offline'>;
    const worker = await workerHeartbeat(ctx.db, {
      organizationId: grant.organizationId, id: request.params.id, currentJobs: body.current_jobs, status, metadata: body.metadata,
    });
    if (!worker) throw notFound(request.params.id);
    return { acknowledged: true, should_drain: false };
  });

  app.post<{ Params: { id: string } }>('/workers/:id/deregister', {
    config: { operation: 'worker.deregister' },
    schema: { tags: ['workers'], summary: 'Deregister a worker (204): it goes offline and its processing jobs return to pending', params: IdParams },
  }, async (request, reply) => {
    const grant = grantOf(request);
    await workerInReach(ctx, grant, request.params.id);
    const result = await workerDeregister(ctx.db, grant.organizationId, request.params.id);
    if (!result) throw notFound(request.params.id);
    return reply.code(204).send();
  });
}
