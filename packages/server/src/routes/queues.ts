import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { ConflictError, LIMITS, NotFoundError, PayloadTooLargeError, QUEUE_NAME_PATTERN, ValidationError } from '@spool/protocol';
import { queueConfigUpsert, queueDelete, queueGetEffective, queueList, queuePause, queueResume, queueStats } from '@spool/engine';
import type { AppContext } from '../app.js';
import { grantOf } from '../http/route-authorization.js';
import { FairnessKey, MaxRetries, QueueName, jsonBytes, nullable } from '../wire/common.js';
import {
  PauseResultSchema,
  QueueConfigSchema,
  QueueStatsSchema,
  QueueSummarySchema,
  ResumeResultSchema,
  queueConfigToWire,
  queueSummaryToWire,
} from '../wire/queue.js';

/** Path of routes that read: any string is a name (an impossible one is simply not found). */
const AnyNameParams = Type.Object({ name: Type.String() });
/** Path of routes that create a config row: the name must be a valid queue name. */
const QueueNameParams = Type.Object({ name: QueueName });
type NameParams = { name: string };

const FAIRNESS_WEIGHTS_MAX = 1000;

const ConfigBody = Type.Object({
  queue_name: Type.Optional(Type.String({ description: 'ignored: the path names the queue' })),
  max_retries: Type.Optional(MaxRetries),
  default_timeout: Type.Optional(nullable(Type.Integer({
    minimum: LIMITS.timeoutSecondsMin,
    maximum: LIMITS.timeoutSecondsMax,
    description: `sets the timeout of jobs enqueued without one, which the server then enforces; null (extension) goes back to the built-in ${LIMITS.timeoutSecondsDefault} s, which it does not`,
  }))),
  rate_limit: Type.Optional(nullable(Type.Integer({ minimum: 1, maximum: 100_000, description: 'most jobs of this queue started per second across all workers (a token bucket; docs/jobs-api.md "Rate limits"); null removes the limit' }))),
  rate_limit_burst: Type.Optional(nullable(Type.Integer({ minimum: 1, maximum: 100_000, description: 'extension: the rate limit\'s bucket size, the most jobs started at once after an idle spell; null = a tenth of rate_limit (at least 1)' }))),
  enabled: Type.Optional(Type.Boolean()),
  settings: Type.Optional(nullable(Type.Record(Type.String(), Type.Unknown()))),
  backoff_base_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400_000, description: 'extension: retry backoff base in ms (default 1000)' })),
  backoff_max_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400_000, description: 'extension: retry backoff cap in ms (default 60000)' })),
  backoff_jitter_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000, description: 'extension: retry backoff jitter in ms (default 500)' })),
  concurrency_limit: Type.Optional(nullable(Type.Integer({ minimum: 1, maximum: 100_000, description: 'extension: most jobs processing at once across all workers; null removes the limit' }))),
  concurrency_key_limit: Type.Optional(nullable(Type.Integer({ minimum: 1, maximum: 100_000, description: 'extension: most jobs processing at once per concurrency_key (jobs without a key are not limited by it); null removes the limit' }))),
  fairness: Type.Optional(nullable(Type.Literal('round_robin', { description: 'extension: claims take turns across the fairness_key values with claimable work instead of oldest first (docs/jobs-api.md "Fair share"); null turns it off' }))),
  fairness_weights: Type.Optional(nullable(Type.Array(Type.Object({
    key: FairnessKey,
    weight: Type.Integer({ minimum: 1, maximum: 100 }),
  }, { additionalProperties: false }), { maxItems: FAIRNESS_WEIGHTS_MAX, description: 'extension: jobs per turn of a fairness key (keys not listed get 1); a list, not an object, because clients rewrite the case of object keys; null clears it' }))),
});
type ConfigBody = Static<typeof ConfigBody>;

const PauseBody = Type.Object({ reason: Type.Optional(nullable(Type.String({ maxLength: 500 }))) });
type PauseBody = Static<typeof PauseBody>;

/** The wire's list of weights as the key → weight object the engine keeps; a key listed twice is refused. */
function weightsByKey(list: { key: string; weight: number }[]): Record<string, number> {
  // No prototype: a key named "__proto__" is a key like any other, not a setter that drops its weight.
  const weights: Record<string, number> = Object.create(null);
  list.forEach(({ key, weight }, index) => {
    if (Object.hasOwn(weights, key)) throw new ValidationError(`fairness_weights/${index}/key: "${key}" is listed twice`, { field: `fairness_weights/${index}/key` });
    weights[key] = weight;
  });
  return weights;
}

const notConfigured = (name: string) => new NotFoundError(`Queue "${name}" has no configuration`, { queue_name: name });

/** Queues (docs/compatibility.md §3.7): they exist implicitly; a config row exists after config or pause. */
export function queueRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/queues', {
    config: { operation: 'queue.read' },
    schema: { tags: ['queues'], summary: 'Configured queues, by name (at most 100)', response: { 200: Type.Array(QueueSummarySchema) } },
  }, async (request) => {
    const grant = grantOf(request);
    return (await queueList(ctx.db, grant.organizationId, 100, grant.queueFilter)).map(queueSummaryToWire);
  });

  app.get<{ Params: NameParams }>('/queues/:name', {
    config: { operation: 'queue.read', addresses: 'queue' },
    schema: {
      tags: ['queues'],
      summary: 'A queue\'s config; a queue with jobs but no config answers its defaults (`configured: false`); 404 when it has neither',
      params: AnyNameParams,
      response: { 200: QueueConfigSchema },
    },
  }, async (request) => {
    // Clients such as the official Spooled dashboard open any queue they list from its jobs.
    const row = QUEUE_NAME_PATTERN.test(request.params.name) ? await queueGetEffective(ctx.db, grantOf(request).organizationId, request.params.name) : null;
    if (!row) throw new NotFoundError(`Queue "${request.params.name}" has no configuration and no jobs`, { queue_name: request.params.name });
    return queueConfigToWire(row, row.configured);
  });

  app.put<{ Params: NameParams; Body: ConfigBody }>('/queues/:name/config', {
    config: { operation: 'queue.manage', addresses: 'queue' },
    schema: {
      tags: ['queues'],
      summary: 'Create or update a queue\'s config (the path names the queue; absent fields keep their value)',
      params: QueueNameParams,
      body: ConfigBody,
      response: { 200: QueueConfigSchema },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const { name } = request.params;
    const body = request.body;
    if (body.settings != null && jsonBytes(body.settings) > LIMITS.tagsBytesMax) {
      throw new PayloadTooLargeError(`settings exceed ${LIMITS.tagsBytesMax} bytes`, { field: 'settings' });
    }
    const row = await queueConfigUpsert(ctx.db, grant.organizationId, name, {
      maxRetries: body.max_retries,
      defaultTimeout: body.default_timeout,
      rateLimit: body.rate_limit,
      rateLimitBurst: body.rate_limit_burst,
      enabled: body.enabled,
      settings: body.settings,
      backoffBaseMs: body.backoff_base_ms,
      backoffMaxMs: body.backoff_max_ms,
      backoffJitterMs: body.backoff_jitter_ms,
      concurrencyLimit: body.concurrency_limit,
      concurrencyKeyLimit: body.concurrency_key_limit,
      fairness: body.fairness,
      fairnessWeights: body.fairness_weights === undefined ? undefined : body.fairness_weights === null ? null : weightsByKey(body.fairness_weights),
    });
    return queueConfigToWire(row);
  });

  app.get<{ Params: NameParams }>('/queues/:name/stats', {
    config: { operation: 'queue.read', addresses: 'queue' },
    schema: { tags: ['queues'], summary: 'Queue statistics (zeros for a queue without jobs)', params: AnyNameParams, response: { 200: QueueStatsSchema } },
  }, async (request) => {
    const { name } = request.params;
    const s = await queueStats(ctx.db, grantOf(request).organizationId, name);
    return {
      queue_name: name,
      pending_jobs: s.pending,
      processing_jobs: s.processing,
      completed_jobs_24h: s.completed_24h,
      failed_jobs_24h: s.failed_24h,
      avg_processing_time_ms: s.avg_processing_ms,
      max_job_age_seconds: s.max_job_age_seconds,
      active_workers: s.active_workers,
      scheduled_jobs: s.scheduled,
      deadletter_jobs_24h: s.deadletter_24h,
      paused: s.paused === true,
    };
  });

  app.post<{ Params: NameParams; Body: PauseBody }>('/queues/:name/pause', {
    config: { operation: 'queue.manage', addresses: 'queue' },
    schema: { tags: ['queues'], summary: 'Pause a queue: claims return [] until resumed (body optional)', params: QueueNameParams, body: PauseBody, response: { 200: PauseResultSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    const row = await queuePause(ctx.db, grant.organizationId, request.params.name, request.body.reason ?? null);
    return { queue_name: row.queue_name, paused: true, paused_at: row.paused_at?.toISOString() ?? null, reason: row.pause_reason };
  });

  app.post<{ Params: NameParams }>('/queues/:name/resume', {
    config: { operation: 'queue.manage', addresses: 'queue' },
    schema: { tags: ['queues'], summary: 'Resume a paused queue and wake its waiting claims (404 without config)', params: AnyNameParams, response: { 200: ResumeResultSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    const { name } = request.params;
    if (!QUEUE_NAME_PATTERN.test(name)) throw notConfigured(name);
    const row = await queueResume(ctx.db, grant.organizationId, name);
    if (!row) throw notConfigured(name);
    return { queue_name: row.queue_name, resumed: true, paused_duration_secs: row.paused_duration_secs };
  });

  app.delete<{ Params: NameParams }>('/queues/:name', {
    config: { operation: 'queue.manage', addresses: 'queue' },
    schema: { tags: ['queues'], summary: 'Delete a queue\'s config (never its jobs); 409 while it has pending or processing jobs', params: AnyNameParams },
  }, async (request, reply) => {
    const grant = grantOf(request);
    const { name } = request.params;
    if (!QUEUE_NAME_PATTERN.test(name)) throw notConfigured(name);
    const outcome = await queueDelete(ctx.db, grant.organizationId, name);
    if (outcome === 'not_found') throw notConfigured(name);
    if (outcome === 'busy') throw new ConflictError(`Queue "${name}" still has pending or processing jobs`, { queue_name: name });
    return reply.code(204).send();
  });
}
