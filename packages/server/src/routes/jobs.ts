import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { LIMITS, NotFoundError, PayloadTooLargeError, ValidationError } from '@spool/protocol';
import { isUuid, jobInsertMany, type JobRow } from '@spool/engine';
import type { AppContext } from '../app.js';
import { assertQueueAllowed, authOf } from '../http/auth.js';
import { DateTime, IdempotencyKey, IdParams, MaxRetries, Priority, QueueName, Tags, TimeoutSeconds, jsonBytes, nullable } from '../wire/common.js';
import { JobSchema, jobToWire } from '../wire/job.js';

const CreateJobBody = Type.Object({
  queue_name: QueueName,
  payload: Type.Unknown(),
  priority: Type.Optional(Priority),
  max_retries: Type.Optional(MaxRetries),
  timeout_seconds: Type.Optional(TimeoutSeconds),
  scheduled_at: Type.Optional(nullable(DateTime)),
  expires_at: Type.Optional(nullable(DateTime)),
  idempotency_key: Type.Optional(nullable(IdempotencyKey)),
  tags: Type.Optional(nullable(Tags)),
  parent_job_id: Type.Optional(nullable(Type.String({ maxLength: 100 }))),
  completion_webhook: Type.Optional(nullable(Type.String({ maxLength: 2048, format: 'uri' }))),
});

type CreateJobBody = {
  queue_name: string;
  payload: unknown;
  priority?: number;
  max_retries?: number;
  timeout_seconds?: number;
  scheduled_at?: string | null;
  expires_at?: string | null;
  idempotency_key?: string | null;
  tags?: Record<string, unknown> | null;
  parent_job_id?: string | null;
  completion_webhook?: string | null;
};

/** Checks what JSON Schema cannot: byte sizes and time relations. */
export function checkJobLimits(body: { payload: unknown; tags?: unknown; scheduled_at?: string | null; expires_at?: string | null }, field = ''): void {
  if (body.payload === undefined) throw new ValidationError(`${field}payload is required`, { field: `${field}payload` });
  const payloadBytes = jsonBytes(body.payload);
  if (payloadBytes > LIMITS.payloadBytesMax) throw new PayloadTooLargeError(`${field}payload is ${payloadBytes} bytes; the limit is ${LIMITS.payloadBytesMax}`, { field: `${field}payload`, limit: LIMITS.payloadBytesMax });
  if (body.tags != null && jsonBytes(body.tags) > LIMITS.tagsBytesMax) throw new PayloadTooLargeError(`${field}tags exceed ${LIMITS.tagsBytesMax} bytes`, { field: `${field}tags` });
  if (body.expires_at && body.scheduled_at && Date.parse(body.expires_at) <= Date.parse(body.scheduled_at)) {
    throw new ValidationError(`${field}expires_at must be later than scheduled_at`, { field: `${field}expires_at` });
  }
}

async function loadJob(ctx: AppContext, organizationId: string, id: string): Promise<JobRow> {
  if (!isUuid(id)) throw new NotFoundError('Job not found');
  const result = await ctx.db.query<JobRow>('SELECT * FROM spool.jobs WHERE organization_id = $1 AND id = $2', [organizationId, id]);
  const row = result.rows[0];
  if (!row) throw new NotFoundError('Job not found');
  return row;
}

export function jobRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Body: CreateJobBody }>('/jobs', {
    schema: {
      tags: ['jobs'],
      summary: 'Create a job (201; 200 with created:false on an idempotent repeat)',
      body: CreateJobBody,
      response: { 200: Type.Object({ id: Type.String(), created: Type.Boolean() }), 201: Type.Object({ id: Type.String(), created: Type.Boolean() }) },
    },
  }, async (request, reply) => {
    const auth = authOf(request);
    const body = request.body;
    checkJobLimits(body);
    assertQueueAllowed(auth, body.queue_name);
    const [result] = await jobInsertMany(ctx.db, [{
      organizationId: auth.organizationId,
      queueName: body.queue_name,
      payload: body.payload,
      priority: body.priority,
      maxRetries: body.max_retries,
      timeoutSeconds: body.timeout_seconds,
      scheduledAt: body.scheduled_at ? new Date(body.scheduled_at) : null,
      expiresAt: body.expires_at ? new Date(body.expires_at) : null,
      idempotencyKey: body.idempotency_key ?? null,
      tags: body.tags ?? null,
      parentJobId: body.parent_job_id && isUuid(body.parent_job_id) ? body.parent_job_id : null,
      completionWebhook: body.completion_webhook ?? null,
    }]);
    return reply.code(result!.created ? 201 : 200).send({ id: result!.id, created: result!.created });
  });

  app.get<{ Params: { id: string } }>('/jobs/:id', {
    schema: { tags: ['jobs'], summary: 'Get a job', params: IdParams, response: { 200: JobSchema } },
  }, async (request) => jobToWire(await loadJob(ctx, authOf(request).organizationId, request.params.id)));
}
