import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { LIMITS, NotFoundError, PayloadTooLargeError } from '@spool/protocol';
import {
  scheduleCreate,
  scheduleDelete,
  scheduleGet,
  scheduleList,
  schedulePreview,
  scheduleRunList,
  scheduleTrigger,
  scheduleUpdate,
  validateSchedule,
  type MissedPolicy,
  type Queryable,
  type ScheduleRow,
  type SchedulePatch,
} from '@spool/engine';
import type { AppContext } from '../app.js';
import type { Grant } from '../authorization.js';
import type { AuthContext } from '../http/auth.js';
import { grantOf } from '../http/route-authorization.js';
import { contractInt, extensionInt } from '../http/warnings.js';
import { admitJobs } from '../http/job-admission.js';
import { withinPlanLimit } from '../http/plan-limits.js';
import { IdParams, MaxRetries, Priority, QueueName, TimeoutSeconds, jsonBytes, nullable } from '../wire/common.js';
import { ScheduleRunSchema, ScheduleSchema, scheduleRunToWire, scheduleToWire } from '../wire/schedule.js';

const JsonObject = Type.Record(Type.String(), Type.Unknown());
const MissedPolicyField = Type.String({ enum: ['skip', 'once', 'all'], description: 'extension; default "once"' });
const CronExpression = Type.String({ minLength: 1, maxLength: 255, description: '6 fields: second minute hour day-of-month month day-of-week (5 fields accepted, second 0)' });
const TimeZoneField = Type.String({ minLength: 1, maxLength: 64, description: 'IANA name, default UTC' });

const CreateBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(nullable(Type.String({ maxLength: 1000 }))),
  cron_expression: CronExpression,
  timezone: Type.Optional(nullable(TimeZoneField)),
  queue_name: QueueName,
  payload_template: JsonObject,
  priority: Type.Optional(Priority),
  max_retries: Type.Optional(MaxRetries),
  timeout_seconds: Type.Optional(TimeoutSeconds),
  is_active: Type.Optional(Type.Boolean()),
  missed_policy: Type.Optional(MissedPolicyField),
  tags: Type.Optional(nullable(JsonObject)),
  metadata: Type.Optional(nullable(JsonObject)),
});

// Every create field, optional; a timezone can be changed but not cleared (it has no null default to fall back to).
const UpdateBody = Type.Partial(Type.Object({ ...CreateBody.properties, timezone: TimeZoneField }));

const PreviewBody = Type.Object({
  cron_expression: CronExpression,
  timezone: Type.Optional(nullable(TimeZoneField)),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'extension: how many fire times, 1..100 (default 10)' })),
  after: Type.Optional(nullable(Type.String({ format: 'date-time' }))),
});

const ListQuery = Type.Object({ limit: Type.Optional(Type.String()), offset: Type.Optional(Type.String()) });
const CountQuery = Type.Object({ count: Type.Optional(Type.String()) });

const PreviewResponse = Type.Object({ cron_expression: Type.String(), timezone: Type.String(), next_runs: Type.Array(Type.String({ format: 'date-time' })) });
const TriggerResponse = Type.Object({ job_id: Type.String(), scheduled_at: Type.String({ format: 'date-time' }), triggered_at: Type.String({ format: 'date-time' }) });

type Body = Record<string, any>;

const PREVIEW_MAX = 100;

function checkSizes(body: Body): void {
  for (const [field, limit] of [['payload_template', LIMITS.payloadBytesMax], ['tags', LIMITS.tagsBytesMax], ['metadata', LIMITS.tagsBytesMax]] as const) {
    if (body[field] == null) continue;
    const bytes = jsonBytes(body[field]);
    if (bytes > limit) throw new PayloadTooLargeError(`${field} is ${bytes} bytes; the limit is ${limit}`, { field, limit });
  }
}

function patchOf(body: Body): SchedulePatch {
  return {
    name: body.name,
    description: body.description,
    cronExpression: body.cron_expression,
    timezone: body.timezone,
    queueName: body.queue_name,
    payloadTemplate: body.payload_template,
    priority: body.priority,
    maxRetries: body.max_retries,
    timeoutSeconds: body.timeout_seconds,
    isActive: body.is_active,
    missedPolicy: body.missed_policy as MissedPolicy | undefined,
    tags: body.tags,
    metadata: body.metadata,
  };
}

/** The organization's schedule when its queue is within the key's reach, else 404 (as a missing one). */
async function ownedSchedule(ctx: AppContext, grant: Grant, id: string): Promise<ScheduleRow> {
  return grant.object(await scheduleGet(ctx.db, grant.organizationId, id), (s) => [s.queue_name], () => new NotFoundError('Schedule not found'));
}

function found<T>(value: T | null): T {
  if (value === null) throw new NotFoundError('Schedule not found');
  return value;
}

const tags = ['schedules'];

/** Schedules (docs/compatibility.md §2 rows 42-50, §3.9) plus the preview and missed_policy extensions. */
export function scheduleRoutes(app: FastifyInstance, ctx: AppContext): void {
  crudRoutes(app, ctx);
  actionRoutes(app, ctx);
  previewRoutes(app, ctx);
}

function crudRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Querystring: { limit?: string; offset?: string } }>('/schedules', {
    config: { operation: 'schedule.read' },
    schema: { tags, summary: 'List schedules, newest first', querystring: ListQuery, response: { 200: Type.Array(ScheduleSchema) } },
  }, async (request, reply) => {
    const limit = contractInt(reply, 'limit', request.query.limit, 100, 1, 500);
    const offset = contractInt(reply, 'offset', request.query.offset, 0, 0, Number.MAX_SAFE_INTEGER);
    const grant = grantOf(request);
    return (await scheduleList(ctx.db, grant.organizationId, limit, offset, grant.queueFilter)).map(scheduleToWire);
  });

  app.post<{ Body: Body }>('/schedules', {
    config: { operation: 'schedule.manage', addresses: 'body_queue' },
    schema: { tags, summary: 'Create a schedule', body: CreateBody, response: { 201: ScheduleSchema } },
  }, async (request, reply) => {
    const grant = grantOf(request);
    const body = request.body;
    checkSizes(body);
    const auth = grant.auth;
    // Validation before plan limits (docs/compatibility.md §1.4). Only active schedules
    // count against max_schedules; a paused one is checked when it resumes.
    validateSchedule(body.cron_expression, body.timezone ?? 'UTC');
    const create = (db: Queryable) => scheduleCreate(db, {
      organizationId: auth.organizationId,
      name: body.name,
      description: body.description ?? null,
      cronExpression: body.cron_expression,
      timezone: body.timezone ?? 'UTC',
      queueName: body.queue_name,
      payloadTemplate: body.payload_template,
      priority: body.priority,
      maxRetries: body.max_retries,
      timeoutSeconds: body.timeout_seconds,
      isActive: body.is_active,
      missedPolicy: body.missed_policy as MissedPolicy | undefined,
      tags: body.tags ?? null,
      metadata: body.metadata ?? null,
    });
    const created = body.is_active === false ? await create(ctx.db) : await withinPlanLimit(ctx, auth, 'schedules', create);
    return reply.code(201).send(scheduleToWire(created));
  });

  app.get<{ Params: { id: string } }>('/schedules/:id', {
    config: { operation: 'schedule.read' },
    schema: { tags, summary: 'Get a schedule', params: IdParams, response: { 200: ScheduleSchema } },
  }, async (request) => scheduleToWire(await ownedSchedule(ctx, grantOf(request), request.params.id)));

  app.put<{ Params: { id: string }; Body: Body }>('/schedules/:id', {
    config: { operation: 'schedule.manage', addresses: 'body_queue' },
    schema: { tags, summary: 'Update a schedule (partial; a new expression or zone recomputes next_run_at)', params: IdParams, body: UpdateBody, response: { 200: ScheduleSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    const body = request.body;
    checkSizes(body);
    const current = await ownedSchedule(ctx, grant, request.params.id);
    if (body.cron_expression !== undefined || body.timezone !== undefined) validateSchedule(body.cron_expression ?? current.cron_expression, body.timezone ?? current.timezone);
    return scheduleToWire(found(await updateWithinPlan(ctx, grant.auth, current, patchOf(body))));
  });

  app.delete<{ Params: { id: string } }>('/schedules/:id', {
    config: { operation: 'schedule.manage' },
    schema: { tags, summary: 'Delete a schedule and its run history', params: IdParams },
  }, async (request, reply) => {
    const grant = grantOf(request);
    await ownedSchedule(ctx, grant, request.params.id);
    found((await scheduleDelete(ctx.db, grant.organizationId, request.params.id)) || null);
    return reply.code(204).send();
  });
}

/**
 * scheduleUpdate, under the schedules limit when it makes an inactive
 * schedule active (resume, or PUT is_active: true). scheduleUpdate commits
 * on its own connection before the limit's lock is released.
 */
function updateWithinPlan(ctx: AppContext, auth: AuthContext, current: ScheduleRow, patch: SchedulePatch): Promise<ScheduleRow | null> {
  const update = () => scheduleUpdate(ctx.db, auth.organizationId, current.id, patch);
  if (current.is_active || patch.isActive !== true) return update();
  return withinPlanLimit(ctx, auth, 'schedules', update);
}

function previewRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Body: Body }>('/schedules/preview', {
    config: { operation: 'schedule.preview' },
    schema: { tags: [...tags, 'extension'], summary: 'Extension: the next fire times of an unsaved expression', body: PreviewBody, response: { 200: PreviewResponse } },
  }, async (request) => {
    const body = request.body;
    const timezone = body.timezone ?? 'UTC';
    validateSchedule(body.cron_expression, timezone);
    const after = body.after ? new Date(body.after) : new Date();
    const count = body.count ?? 10;
    return { cron_expression: body.cron_expression, timezone, next_runs: schedulePreview(body.cron_expression, timezone, after, count).map((d) => d.toISOString()) };
  });

  app.get<{ Params: { id: string }; Querystring: { count?: string } }>('/schedules/:id/preview', {
    config: { operation: 'schedule.read' },
    schema: { tags: [...tags, 'extension'], summary: 'Extension: the next N fire times of a schedule (count 1-100, default 10)', params: IdParams, querystring: CountQuery, response: { 200: PreviewResponse } },
  }, async (request) => {
    const schedule = await ownedSchedule(ctx, grantOf(request), request.params.id);
    const count = extensionInt('count', request.query.count, 10, 1, PREVIEW_MAX);
    const runs = schedulePreview(schedule.cron_expression, schedule.timezone, new Date(), count);
    return { cron_expression: schedule.cron_expression, timezone: schedule.timezone, next_runs: runs.map((d) => d.toISOString()) };
  });
}

function actionRoutes(app: FastifyInstance, ctx: AppContext): void {
  for (const action of ['pause', 'resume'] as const) {
    app.post<{ Params: { id: string } }>(`/schedules/:id/${action}`, {
      config: { operation: 'schedule.manage' },
      schema: { tags, summary: action === 'pause' ? 'Pause a schedule' : 'Resume a schedule from its next tick (no burst of missed ticks)', params: IdParams, response: { 200: ScheduleSchema } },
    }, async (request) => {
      const grant = grantOf(request);
      const current = await ownedSchedule(ctx, grant, request.params.id);
      const patch: SchedulePatch = action === 'pause' ? { isActive: false } : { isActive: true, recompute: true };
      return scheduleToWire(found(await updateWithinPlan(ctx, grant.auth, current, patch)));
    });
  }

  app.post<{ Params: { id: string } }>('/schedules/:id/trigger', {
    config: { operation: 'schedule.manage' },
    schema: { tags, summary: 'Create one job from the schedule now (also while paused)', params: IdParams, response: { 200: TriggerResponse } },
  }, async (request) => {
    const grant = grantOf(request);
    const auth = grant.auth;
    const schedule = await ownedSchedule(ctx, grant, request.params.id);
    // A triggered job is a new job: the same plan limits as POST /jobs.
    const quota = await admitJobs(ctx, auth, [{ queueName: schedule.queue_name, payloadBytes: jsonBytes(schedule.payload_template ?? {}) }]);
    const result = await scheduleTrigger(ctx.db, auth.organizationId, request.params.id).then(
      async (triggered) => {
        await quota.settle(triggered ? 1 : 0);
        return found(triggered);
      },
      async (err: unknown) => {
        await quota.settle(0);
        throw err;
      },
    );
    const at = result.triggeredAt.toISOString();
    return { job_id: result.jobId, scheduled_at: at, triggered_at: at };
  });

  app.get<{ Params: { id: string }; Querystring: { limit?: string } }>('/schedules/:id/history', {
    config: { operation: 'schedule.read' },
    schema: { tags, summary: 'Runs of a schedule, newest first', params: IdParams, querystring: Type.Object({ limit: Type.Optional(Type.String()) }), response: { 200: Type.Array(ScheduleRunSchema) } },
  }, async (request, reply) => {
    const limit = contractInt(reply, 'limit', request.query.limit, 50, 1, 500);
    const grant = grantOf(request);
    await ownedSchedule(ctx, grant, request.params.id);
    const runs = found(await scheduleRunList(ctx.db, grant.organizationId, request.params.id, limit));
    return runs.map(scheduleRunToWire);
  });
}
