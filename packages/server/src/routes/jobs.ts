import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { ConflictError, JOB_STATUSES, LIMITS, NotFoundError, PayloadTooLargeError, TRACESTATE_MAX, ValidationError, readTraceContext, type TraceContext } from '@spool/protocol';
import {
  JOB_ORDER_COLUMNS,
  isUuid,
  jobCancelMany,
  jobEdit,
  jobExplain,
  jobGet,
  jobList,
  jobRetryMany,
  jobSetPriority,
  jobStats,
  jobStatusMany,
  type JobEdit,
  type JobEditOutcome,
  type JobOrderColumn,
  type JobRow,
  type NewJob,
} from '@spool/engine';
import type { AppContext } from '../app.js';
import { actorOf } from '../http/auth.js';
import { grantOf } from '../http/route-authorization.js';
import { enforceJobLimits } from '../http/plan-limits.js';
import { contractChoice, contractInt } from '../http/warnings.js';
import { admitJobs, enqueueAdmitted } from '../http/job-admission.js';
import { checkedTraceContext, enqueueTraceHeaders } from '../http/trace-context.js';
import { ATTR_MESSAGING_MESSAGE_ID, startEnqueueSpan } from '../trace-spans.js';
import { assertWebhookTarget, webhookPolicy } from '../webhooks/ssrf.js';
import { ConcurrencyKey, DateTime, FairnessKey, IdempotencyKey, IdParams, JobKeyField, KeyOutcomeField, MaxRetries, Priority, QueueName, Tags, TimeoutSeconds, jsonBytes, nullable } from '../wire/common.js';
import { JobSchema, JobSummarySchema, jobSummaryToWire, jobToWire } from '../wire/job.js';
import { checkJobKey, engineJobKey, type JobKeyBody } from '../job-key.js';
import { JobExplanationSchema } from '../wire/job-explain.js';

/** Extension: the W3C trace context of the enqueuer, checked strictly in code (protocol trace-context.ts) for precise messages. */
export const TraceparentField = Type.String({
  description: 'extension: W3C traceparent (version-traceid-parentid-flags, lowercase hex, ids not all zeros), e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01. Overrides the traceparent header. Workers\' spans link to it (docs/observability.md, Tracing).',
});
export const TracestateField = Type.String({ description: `extension: W3C tracestate going with traceparent, at most ${TRACESTATE_MAX} characters and 32 key=value members` });

/** The trace context of a create body, when it names one. */
export function bodyTraceContext(body: { traceparent?: string | null; tracestate?: string | null }): TraceContext | null {
  if (body.traceparent == null && body.tracestate == null) return null;
  return checkedTraceContext(readTraceContext(body.traceparent, body.tracestate));
}

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
  concurrency_key: Type.Optional(nullable(ConcurrencyKey)),
  fairness_key: Type.Optional(nullable(FairnessKey)),
  job_key: Type.Optional(nullable(JobKeyField)),
  traceparent: Type.Optional(nullable(TraceparentField)),
  tracestate: Type.Optional(nullable(TracestateField)),
});
type CreateJobBody = Static<typeof CreateJobBody>;

/** Extension request headers of an enqueue (W3C Trace Context); other headers are not listed. */
export const TraceHeaders = Type.Object({
  traceparent: Type.Optional(Type.String({ description: 'extension: W3C traceparent of the enqueuer (a body field of the same name wins)' })),
  tracestate: Type.Optional(Type.String({ description: `extension: W3C tracestate, at most ${TRACESTATE_MAX} characters` })),
});

const CreatedSchema = Type.Object({ id: Type.String(), created: Type.Boolean(), key_outcome: Type.Optional(KeyOutcomeField) });

/** Checks what JSON Schema cannot: byte sizes, time relations, job_key rules. Returns the payload's size in bytes. */
export function checkJobLimits(body: { payload?: unknown; tags?: unknown; scheduled_at?: string | null; expires_at?: string | null; job_key?: JobKeyBody | null }, field = ''): number {
  if (body.job_key) checkJobKey(body.job_key, body.scheduled_at, field);
  if (body.payload === undefined) throw new ValidationError(`${field}payload is required`, { field: `${field}payload` });
  const payloadBytes = jsonBytes(body.payload);
  if (payloadBytes > LIMITS.payloadBytesMax) throw new PayloadTooLargeError(`${field}payload is ${payloadBytes} bytes; the limit is ${LIMITS.payloadBytesMax}`, { field: `${field}payload`, limit: LIMITS.payloadBytesMax });
  if (body.tags != null && jsonBytes(body.tags) > LIMITS.tagsBytesMax) throw new PayloadTooLargeError(`${field}tags exceed ${LIMITS.tagsBytesMax} bytes`, { field: `${field}tags` });
  if (body.expires_at && body.scheduled_at && Date.parse(body.expires_at) <= Date.parse(body.scheduled_at)) {
    throw new ValidationError(`${field}expires_at must be later than scheduled_at`, { field: `${field}expires_at` });
  }
  return payloadBytes;
}

/** The engine's input for one validated create body. */
export function toNewJob(organizationId: string, queueName: string, body: Omit<CreateJobBody, 'queue_name' | 'traceparent' | 'tracestate'>, trace: TraceContext | null = null, actor: string | null = null): NewJob {
  return {
    organizationId,
    actor,
    queueName,
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
    concurrencyKey: body.concurrency_key ?? null,
    fairnessKey: body.fairness_key ?? null,
    jobKey: body.job_key ? engineJobKey(body.job_key) : null,
    traceparent: trace?.traceparent ?? null,
    tracestate: trace?.tracestate ?? null,
  };
}

export async function loadJob(ctx: AppContext, organizationId: string, id: string): Promise<JobRow> {
  const row = await jobGet(ctx.db, organizationId, id);
  if (!row) throw new NotFoundError('Job not found', { job_id: id });
  return row;
}

const ListQuery = Type.Object({
  queue_name: Type.Optional(Type.String()),
  status: Type.Optional(Type.String()),
  tag: Type.Optional(Type.String()),
  limit: Type.Optional(Type.String()),
  offset: Type.Optional(Type.String()),
  order_by: Type.Optional(Type.String()),
  order_dir: Type.Optional(Type.String()),
});
type ListQuery = Static<typeof ListQuery>;

const StatsSchema = Type.Object({
  pending: Type.Integer(), scheduled: Type.Integer(), processing: Type.Integer(), completed: Type.Integer(),
  failed: Type.Integer(), deadletter: Type.Integer(), cancelled: Type.Integer(), total: Type.Integer(),
});

const StatusRowSchema = Type.Object({
  id: Type.String(), status: Type.String(), queue_name: Type.String(), retry_count: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }), completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

const BATCH_STATUS_MAX = 100;

/** Extension: PATCH /jobs/{id}. Each field is checked as POST /jobs checks it; others are refused, not ignored. */
const UpdateJobBody = Type.Object({
  payload: Type.Optional(Type.Unknown({ description: 'the new payload (any JSON, null included)' })),
  priority: Type.Optional(Priority),
  queue_name: Type.Optional(QueueName),
  max_retries: Type.Optional(MaxRetries),
  tags: Type.Optional(nullable(Tags)),
  scheduled_at: Type.Optional(nullable(DateTime)),
}, { additionalProperties: false });
type UpdateJobBody = Static<typeof UpdateJobBody>;
const UPDATE_FIELDS = ['payload', 'priority', 'queue_name', 'max_retries', 'tags', 'scheduled_at'] as const;

/** The error for an edit job-edit.sql refused, saying why and what to do instead. */
function editRefusal(id: string, refused: Extract<JobEditOutcome, { outcome: 'refused' }>, body: UpdateJobBody): Error {
  const status = refused.status;
  switch (refused.refusal) {
    case 'status': {
      const instead = status === 'processing'
        ? 'cancel it first (DELETE /jobs/{id}) and enqueue a new job, or wait until it ends; a dead-lettered job can then be edited'
        : status === 'completed'
          ? 'enqueue a new job instead'
          : 'enqueue a new job instead (a cancelled job is not retried)';
      return new ConflictError(`Job is ${status}: only pending, scheduled or dead-lettered jobs can be edited; ${instead}`, { job_id: id, status });
    }
    case 'scheduled_at':
      return new ConflictError(`Job is ${status}: scheduled_at applies to pending or scheduled jobs; a dead-lettered job runs when it is retried (POST /jobs/{id}/retry)`, { job_id: id, status, field: 'scheduled_at' });
    case 'expires_at':
      return new ValidationError(`scheduled_at must be earlier than the job's expires_at (${refused.expiresAt?.toISOString()})`, { field: 'scheduled_at', expires_at: refused.expiresAt?.toISOString() ?? null });
    case 'max_retries':
      return new ValidationError(`max_retries ${body.max_retries} is below the job's retry_count ${refused.retryCount}: a ${status} job must keep at least the retries it has used (a dead-lettered job may go lower: its replay starts again)`, { field: 'max_retries', retry_count: refused.retryCount });
  }
}

/** Jobs: create, read, list, stats, batch status, cancel, retry, priority, edit (docs/compatibility.md §3.3). */
export function jobRoutes(app: FastifyInstance, ctx: AppContext): void {
  const policy = webhookPolicy(ctx.config);
  app.post<{ Body: CreateJobBody }>('/jobs', {
    config: { operation: 'job.create', addresses: 'body_queue' },
    schema: {
      tags: ['jobs'],
      summary: 'Create a job (201; 200 with created:false on an idempotent repeat)',
      description: 'Concurrent creates are group-committed: they share one INSERT, one NOTIFY and one commit. '
        + 'Extension: the `traceparent` and `tracestate` headers (W3C Trace Context), or the body fields of the same names, give the job its enqueuer\'s trace; a malformed one is a 400.',
      headers: TraceHeaders,
      body: CreateJobBody,
      response: { 200: CreatedSchema, 201: CreatedSchema },
    },
  }, async (request, reply) => {
    const auth = grantOf(request).auth;
    const body = request.body;
    const payloadBytes = checkJobLimits(body);
    // The body's context is this job's own; the headers' that of the request.
    const fromHeaders = enqueueTraceHeaders(request.headers);
    let trace = bodyTraceContext(body) ?? fromHeaders;
    // Refused when saved, not only when the job finishes: the caller learns it now.
    if (body.completion_webhook) await assertWebhookTarget(body.completion_webhook, policy, 'completion_webhook');
    const span = ctx.tracing ? startEnqueueSpan(ctx.tracing, body.queue_name, auth.organizationId, trace, 'http') : null;
    if (span) trace = span.context;
    const job = toNewJob(auth.organizationId, body.queue_name, body, trace, actorOf(auth));
    try {
      // Nothing may throw between admitting and settling: settle ends the plan-limit transaction.
      const quota = await admitJobs(ctx, auth, [{ queueName: body.queue_name, payloadBytes }]);
      const result = await enqueueAdmitted(ctx, quota, job).catch(async (err: unknown) => {
        await quota.settle(0);
        throw err;
      });
      await quota.settle(result.created ? 1 : 0);
      span?.setAttributes({ [ATTR_MESSAGING_MESSAGE_ID]: result.id, 'spool.created': result.created });
      span?.end();
      return reply.code(result.created ? 201 : 200).send(
        result.keyOutcome ? { id: result.id, created: result.created, key_outcome: result.keyOutcome } : { id: result.id, created: result.created },
      );
    } catch (err) {
      span?.end(err);
      throw err;
    }
  });

  app.get<{ Querystring: ListQuery }>('/jobs', {
    config: { operation: 'job.list' },
    schema: {
      tags: ['jobs'],
      summary: 'List jobs (newest first; limit 1..100 clamped; invalid status or order ignored)',
      querystring: ListQuery,
      response: { 200: Type.Array(JobSummarySchema) },
    },
  }, async (request, reply) => {
    const q = request.query;
    const grant = grantOf(request);
    const rows = await jobList(ctx.db, {
      organizationId: grant.organizationId,
      queues: grant.queueFilter,
      queueName: q.queue_name || null,
      status: contractChoice(reply, 'status', q.status, JOB_STATUSES),
      tag: q.tag || null,
      limit: contractInt(reply, 'limit', q.limit, 50, 1, 100),
      offset: contractInt(reply, 'offset', q.offset, 0, 0, 1_000_000_000),
      orderBy: contractChoice(reply, 'order_by', q.order_by, JOB_ORDER_COLUMNS, 'sorted by created_at') ?? undefined,
      orderDir: contractChoice(reply, 'order_dir', q.order_dir?.toLowerCase(), ['asc', 'desc'] as const, 'sorted descending') ?? 'desc',
    });
    return rows.map(jobSummaryToWire);
  });

  app.get('/jobs/stats', {
    config: { operation: 'job.stats' },
    schema: { tags: ['jobs'], summary: 'Job counts by status for the organization', response: { 200: StatsSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    return jobStats(ctx.db, grant.organizationId, grant.queueFilter);
  });

  app.get<{ Querystring: { ids?: string } }>('/jobs/status', {
    config: { operation: 'job.list' },
    schema: {
      tags: ['jobs'],
      summary: 'Status of up to 100 jobs: ?ids=a,b,c (unknown ids are left out)',
      querystring: Type.Object({ ids: Type.Optional(Type.String()) }),
      response: { 200: Type.Array(StatusRowSchema) },
    },
  }, async (request) => {
    const ids = [...new Set((request.query.ids ?? '').split(',').map((id) => id.trim()).filter((id) => id !== ''))];
    if (ids.length > BATCH_STATUS_MAX) throw new ValidationError(`ids may name at most ${BATCH_STATUS_MAX} jobs (got ${ids.length})`, { field: 'ids' });
    const grant = grantOf(request);
    // Jobs of other queues are left out like unknown ids.
    const rows = (await jobStatusMany(ctx.db, grant.organizationId, ids)).filter((row) => grant.allows(row.queue_name));
    return rows.map((row) => ({ ...row, created_at: row.created_at.toISOString(), completed_at: row.completed_at?.toISOString() ?? null }));
  });

  app.get<{ Params: { id: string } }>('/jobs/:id', {
    config: { operation: 'job.read', addresses: 'job' },
    schema: { tags: ['jobs'], summary: 'Get a job', params: IdParams, response: { 200: JobSchema } },
  }, async (request) => jobToWire(await loadJob(ctx, grantOf(request).organizationId, request.params.id)));

  app.get<{ Params: { id: string } }>('/jobs/:id/explain', {
    config: { operation: 'job.read', addresses: 'job' },
    schema: {
      tags: ['jobs'],
      summary: 'Why a job is not running (extension): runnable, and the reasons with what to do next',
      description: 'Reads only (no rate-limit token is taken). Codes: docs/jobs-api.md, "Explain".',
      params: IdParams,
      response: { 200: JobExplanationSchema },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const explanation = await jobExplain(ctx.db, grant.organizationId, request.params.id, { canSee: (queue) => grant.allows(queue) });
    if (!explanation) throw new NotFoundError('Job not found', { job_id: request.params.id });
    return explanation;
  });

  app.delete<{ Params: { id: string } }>('/jobs/:id', {
    config: { operation: 'job.cancel', addresses: 'job' },
    schema: {
      tags: ['jobs'],
      summary: 'Cancel a pending or scheduled job (204)',
      description: 'A processing job answers 409 CONFLICT with details.cancel_requested = true: Spool marks it, and its worker learns from the realtime event job.cancel_requested or its next heartbeat (extension). Finished jobs: 409.',
      params: IdParams,
    },
  }, async (request, reply) => {
    const id = request.params.id.toLowerCase();
    const grant = grantOf(request);
    const outcome = (await jobCancelMany(ctx.db, grant.organizationId, [id], actorOf(grant.auth))).get(id)!;
    switch (outcome.outcome) {
      case 'cancelled':
        return reply.code(204).send();
      case 'cancel_requested':
        throw new ConflictError('Job is processing: cancellation was requested and its worker will be told (realtime event, or its next heartbeat)', { job_id: id, status: 'processing', cancel_requested: true });
      case 'conflict':
        throw new ConflictError(`Job is ${outcome.previousStatus}: only pending or scheduled jobs can be cancelled`, { job_id: id, status: outcome.previousStatus });
      default:
        throw new NotFoundError('Job not found', { job_id: id });
    }
  });

  app.post<{ Params: { id: string } }>('/jobs/:id/retry', {
    config: { operation: 'job.retry', addresses: 'job' },
    schema: { tags: ['jobs'], summary: 'Retry a failed or dead-lettered job now (body ignored)', params: IdParams, response: { 200: JobSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    const { organizationId } = grant;
    const [row] = await jobRetryMany(ctx.db, { organizationId, ids: [request.params.id.toLowerCase()], resetRetryCount: false, from: ['failed', 'deadletter'], actor: actorOf(grant.auth) });
    if (row) return jobToWire(row);
    const job = await loadJob(ctx, organizationId, request.params.id);
    throw new ConflictError(`Job is ${job.status}: only failed or dead-lettered jobs can be retried`, { job_id: job.id, status: job.status });
  });

  app.patch<{ Params: { id: string }; Body: UpdateJobBody }>('/jobs/:id', {
    // A move to another queue needs the key's access to both: the job's queue (404 like any job out of reach) and the new one (403).
    config: { operation: 'job.update', addresses: 'job_and_body_queue' },
    schema: {
      tags: ['jobs', 'extension'],
      summary: 'Extension: edit a pending, scheduled or dead-lettered job (payload, priority, queue_name, max_retries, tags, scheduled_at)',
      description: 'Send any of the fields; an empty body is a 400 and unknown fields are refused. A processing or finished job is a 409 CONFLICT '
        + '(cancel it first, or wait for it to end). A dead-lettered job stays dead-lettered: replay it with POST /jobs/{id}/retry or POST /jobs/dlq/retry, '
        + 'which run the edited job. The edit is recorded in the job\'s history (event `edit`, with the credential as `actor` and the changed fields). '
        + 'scheduled_at (pending or scheduled jobs only): in the future makes the job scheduled; now, the past or null makes it pending, due at once. '
        + 'Answers the job as GET /jobs/{id} does (docs/jobs-api.md, "Edit a job").',
      params: IdParams,
      body: UpdateJobBody,
      response: { 200: JobSchema },
    },
  }, async (request) => {
    const body = request.body ?? {};
    const given = UPDATE_FIELDS.filter((field) => body[field] !== undefined);
    if (given.length === 0) throw new ValidationError(`Send at least one of ${UPDATE_FIELDS.join(', ')}`, { fields: UPDATE_FIELDS });
    const grant = grantOf(request);
    if (body.payload !== undefined) {
      const payloadBytes = checkJobLimits(body);
      await enforceJobLimits(ctx, grant.auth, 0, payloadBytes);
    } else {
      checkJobLimits({ payload: null, tags: body.tags });
    }
    const edit: JobEdit = {
      payload: body.payload,
      priority: body.priority,
      queueName: body.queue_name,
      maxRetries: body.max_retries,
      tags: body.tags === undefined ? undefined : (body.tags as Record<string, unknown> | null),
      scheduledAt: body.scheduled_at === undefined ? undefined : body.scheduled_at === null ? null : new Date(body.scheduled_at),
    };
    const id = request.params.id.toLowerCase();
    const result = await jobEdit(ctx.db, { organizationId: grant.organizationId, id, edit, actor: actorOf(grant.auth), queues: grant.queueFilter });
    switch (result.outcome) {
      case 'edited':
        return jobToWire(result.job);
      case 'not_found':
        throw new NotFoundError('Job not found', { job_id: id });
      case 'refused':
        throw editRefusal(id, result, body);
    }
  });

  app.put<{ Params: { id: string }; Body: { priority: number } }>('/jobs/:id/priority', {
    config: { operation: 'job.set_priority', addresses: 'job' },
    schema: {
      tags: ['jobs'],
      summary: 'Change the priority of a pending or scheduled job (else 404)',
      description: 'A change is recorded in the job\'s history as PATCH /jobs/{id} records one: event `edit`, the credential as `actor`, details {fields: ["priority"], from, to}.',
      params: IdParams,
      body: Type.Object({ priority: Priority }),
      response: { 200: Type.Object({ job_id: Type.String(), old_priority: Type.Integer(), new_priority: Type.Integer() }) },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const changed = await jobSetPriority(ctx.db, grant.organizationId, request.params.id, request.body.priority, actorOf(grant.auth));
    if (!changed) throw new NotFoundError('No pending or scheduled job with this id', { job_id: request.params.id });
    return { job_id: request.params.id, old_priority: changed.oldPriority, new_priority: changed.newPriority };
  });
}
