import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { ValidationError } from '@spool/protocol';
import { dlqList, dlqPurge, jobRetryMany } from '@spool/engine';
import type { AppContext } from '../app.js';
import { actorOf } from '../http/auth.js';
import { grantOf } from '../http/route-authorization.js';
import { DateTime, QueueName, nullable } from '../wire/common.js';
import { JobSummarySchema, jobSummaryToWire } from '../wire/job.js';
import { contractInt } from '../http/warnings.js';

const DlqQuery = Type.Object({
  queue_name: Type.Optional(Type.String()),
  limit: Type.Optional(Type.String()),
  offset: Type.Optional(Type.String()),
});
type DlqQuery = Static<typeof DlqQuery>;

const DlqRow = Type.Object({
  ...JobSummarySchema.properties,
  last_error: Type.Union([Type.String(), Type.Null()], { description: 'extension: why the job was dead-lettered' }),
});

const RetryBody = Type.Object({
  job_ids: Type.Optional(Type.Array(Type.String(), { maxItems: 100 })),
  queue_name: Type.Optional(nullable(QueueName)),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
});
type RetryBody = Static<typeof RetryBody>;

const PurgeBody = Type.Object({
  queue_name: Type.Optional(nullable(QueueName)),
  older_than: Type.Optional(nullable(DateTime)),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
  confirm: Type.Optional(Type.Boolean()),
});
type PurgeBody = Static<typeof PurgeBody>;

/** The dead-letter queue (docs/compatibility.md §3.6). */
export function jobDlqRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Querystring: DlqQuery }>('/jobs/dlq', {
    config: { operation: 'dlq.list' },
    schema: {
      tags: ['dlq'],
      summary: 'Dead-lettered jobs, newest first (limit 1..100 clamped)',
      querystring: DlqQuery,
      response: { 200: Type.Array(DlqRow) },
    },
  }, async (request, reply) => {
    const grant = grantOf(request);
    const rows = await dlqList(ctx.db, {
      organizationId: grant.organizationId,
      queues: grant.queueFilter,
      queueName: request.query.queue_name || null,
      limit: contractInt(reply, 'limit', request.query.limit, 50, 1, 100),
      offset: contractInt(reply, 'offset', request.query.offset, 0, 0, 1_000_000_000),
    });
    return rows.map((row) => ({ ...jobSummaryToWire(row), last_error: row.last_error }));
  });

  app.post<{ Body: RetryBody }>('/jobs/dlq/retry', {
    config: { operation: 'dlq.retry', addresses: 'body_queue' },
    schema: {
      tags: ['dlq'],
      summary: 'Replay dead-lettered jobs: the given ids, else the oldest `limit` of a queue, else of the organization',
      body: RetryBody,
      response: { 200: Type.Object({ retried_count: Type.Integer(), retried_jobs: Type.Array(Type.String()) }) },
    },
  }, async (request) => {
    const body = request.body;
    const ids = body.job_ids && body.job_ids.length > 0 ? body.job_ids.map((id) => id.toLowerCase()) : null;
    const grant = grantOf(request);
    // Without a queue_name this replays the organization's DLQ: only the key's queues of it.
    const rows = await jobRetryMany(ctx.db, {
      organizationId: grant.organizationId,
      queues: grant.queueFilter,
      ids,
      queueName: body.queue_name ?? null,
      limit: ids ? ids.length : body.limit ?? 100,
      resetRetryCount: true,
      from: ['deadletter'],
      actor: actorOf(grant.auth),
    });
    return { retried_count: rows.length, retried_jobs: rows.map((row) => row.id) };
  });

  app.post<{ Body: PurgeBody }>('/jobs/dlq/purge', {
    config: { operation: 'dlq.purge', addresses: 'body_queue' },
    schema: {
      tags: ['dlq'],
      summary: 'Delete dead-lettered jobs (confirm must be true)',
      body: PurgeBody,
      response: { 200: Type.Object({ purged_count: Type.Integer() }) },
    },
  }, async (request) => {
    const body = request.body;
    if (body.confirm !== true) throw new ValidationError('confirm must be true to purge the dead-letter queue', { field: 'confirm' });
    const grant = grantOf(request);
    const purged = await dlqPurge(ctx.db, {
      organizationId: grant.organizationId,
      queues: grant.queueFilter,
      queueName: body.queue_name ?? null,
      olderThan: body.older_than ? new Date(body.older_than) : null,
      limit: body.limit ?? 10_000,
      actor: actorOf(grant.auth),
    });
    return { purged_count: purged };
  });
}
