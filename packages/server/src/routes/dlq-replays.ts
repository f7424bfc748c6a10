import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { ConflictError, NotFoundError, ValidationError } from '@spool/protocol';
import { DLQ_REPLAY_LIMITS, dlqReplayCancel, dlqReplayCreate, dlqReplayGet, dlqReplayList } from '@spool/engine';
import type { AppContext } from '../app.js';
import { actorOf } from '../http/auth.js';
import { grantOf } from '../http/route-authorization.js';
import { IdParams, QueueName } from '../wire/common.js';
import { DlqReplaySchema, DlqReplayStatusSchema, ReplayEditsSchema, dlqReplayToWire } from '../wire/dlq-replay.js';

const L = DLQ_REPLAY_LIMITS;

const CreateBody = Type.Object({
  queue_name: Type.Optional(QueueName),
  job_ids: Type.Optional(Type.Array(Type.String({ format: 'uuid' }), {
    minItems: 1, maxItems: L.jobIdsMax, description: `only these jobs (1..${L.jobIdsMax}); ids that are not dead-lettered (or not of the key's queues) are left out of total`,
  })),
  created_after: Type.Optional(Type.String({ format: 'date-time', description: 'only jobs created at or after this time' })),
  created_before: Type.Optional(Type.String({ format: 'date-time', description: 'only jobs created before this time' })),
  error_contains: Type.Optional(Type.String({ minLength: 1, maxLength: L.errorContainsMax, description: 'only jobs whose last_error contains this text (case-insensitive)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: L.maxJobs, description: `at most this many jobs, oldest first (default and most: ${L.maxJobs})` })),
  edits: Type.Optional(ReplayEditsSchema),
  per_second: Type.Optional(Type.Integer({
    minimum: L.perSecondMin, maximum: L.perSecondMax,
    description: `jobs replayed per second at most, across every server (${L.perSecondMin}..${L.perSecondMax}); absent: batches of ${L.batchMax} as fast as they go`,
  })),
}, { additionalProperties: false });
type CreateBody = Static<typeof CreateBody>;

const ListQuery = Type.Object({
  status: Type.Optional(DlqReplayStatusSchema),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
});
type ListQuery = Static<typeof ListQuery>;

const tags = ['dlq', 'extension'];

/**
 * Extension: paced DLQ replays (docs/jobs-api.md, "Paced DLQ replays"): a
 * replay of any size is an operation with an id, progress and cancel, run
 * by the servers' DlqReplayer at `per_second`. The contract's
 * POST /jobs/dlq/retry (100 per call) is unchanged.
 */
export function dlqReplayRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Body: CreateBody }>('/jobs/dlq/replays', {
    config: { operation: 'dlq.replay', addresses: 'body_queue' },
    // Said before the schema's "payload is not allowed here", so that the caller learns what to do instead.
    preValidation: async (request) => {
      const edits = (request.body as { edits?: unknown } | undefined)?.edits;
      if (edits && typeof edits === 'object' && !Array.isArray(edits) && 'payload' in edits) {
        throw new ValidationError('edits.payload is not allowed: a replay edits many jobs at once and would give them all one payload; change payloads with PATCH /jobs/{id}, then replay', { field: 'edits.payload' });
      }
    },
    schema: {
      tags,
      summary: 'Extension: start a paced replay of dead-lettered jobs (202 with the replay)',
      description: 'Lists the dead-lettered jobs that match the filter now (any of queue_name, job_ids, created_after/created_before, error_contains; none: the whole DLQ of the key\'s queues), '
        + `oldest first, at most \`limit\` (${L.maxJobs}), and replays them in the background: each batch moves its jobs to pending with a fresh retry budget `
        + '(as POST /jobs/dlq/retry does) and the edits applied, at most per_second jobs a second across every server. Each replayed job\'s history gets a `retry` entry with '
        + 'the credential as `actor` and details {replay_id} (and what the edits changed). Follow it with GET /jobs/dlq/replays/{id}; DELETE cancels. '
        + `A key limited to some queues replays only jobs of its queues; a queue_name or edits.queue_name it may not use is a 403. At most ${L.runningMax} replays of an organization run at once (409).`,
      body: CreateBody,
      response: { 202: DlqReplaySchema },
    },
  }, async (request, reply) => {
    const body = request.body;
    const grant = grantOf(request);
    if (body.edits?.queue_name) grant.queue(body.edits.queue_name);
    const after = body.created_after ? new Date(body.created_after) : null;
    const before = body.created_before ? new Date(body.created_before) : null;
    if (after && before && after >= before) throw new ValidationError('created_after must be earlier than created_before', { field: 'created_after' });
    const created = await dlqReplayCreate(ctx.db, {
      organizationId: grant.organizationId,
      queueName: body.queue_name ?? null,
      jobIds: body.job_ids ?? null,
      createdAfter: after,
      createdBefore: before,
      errorContains: body.error_contains ?? null,
      limit: body.limit ?? null,
      queues: grant.queueFilter,
      edits: { priority: body.edits?.priority, maxRetries: body.edits?.max_retries, queueName: body.edits?.queue_name },
      perSecond: body.per_second ?? null,
      actor: actorOf(grant.auth),
    });
    if (!created) {
      throw new ConflictError(`${L.runningMax} DLQ replays of this organization are running: wait for one to finish, or cancel one (DELETE /jobs/dlq/replays/{id})`, { running_max: L.runningMax });
    }
    if (created.status === 'running') ctx.dlqReplayer?.wake();
    reply.code(202);
    return dlqReplayToWire(created);
  });

  app.get<{ Querystring: ListQuery }>('/jobs/dlq/replays', {
    config: { operation: 'dlq.replay_read' },
    schema: {
      tags,
      summary: 'Extension: DLQ replays, newest first (a key limited to some queues sees the replays within them)',
      querystring: ListQuery,
      response: { 200: Type.Array(DlqReplaySchema) },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const rows = await dlqReplayList(ctx.db, {
      organizationId: grant.organizationId,
      queues: grant.queueFilter,
      status: request.query.status ?? null,
      limit: request.query.limit ?? 50,
      offset: request.query.offset ?? 0,
    });
    return rows.map(dlqReplayToWire);
  });

  app.get<{ Params: { id: string } }>('/jobs/dlq/replays/:id', {
    config: { operation: 'dlq.replay_read' },
    schema: {
      tags,
      summary: 'Extension: a DLQ replay and its progress (total, done, skipped, remaining, progress %, rate, eta_seconds)',
      params: IdParams,
      response: { 200: DlqReplaySchema },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const row = await dlqReplayGet(ctx.db, grant.organizationId, request.params.id, grant.queueFilter);
    if (!row) throw new NotFoundError('DLQ replay not found', { replay_id: request.params.id });
    return dlqReplayToWire(row);
  });

  app.delete<{ Params: { id: string } }>('/jobs/dlq/replays/:id', {
    config: { operation: 'dlq.replay_cancel' },
    schema: {
      tags,
      summary: 'Extension: cancel a running DLQ replay (it stops between two batches; jobs already replayed stay replayed)',
      description: 'Answers the replay, cancelled; a replay already cancelled is answered as it is. A completed or failed replay is a 409.',
      params: IdParams,
      response: { 200: DlqReplaySchema },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const id = request.params.id;
    const result = await dlqReplayCancel(ctx.db, { organizationId: grant.organizationId, id, queues: grant.queueFilter, actor: actorOf(grant.auth) });
    if (!result) throw new NotFoundError('DLQ replay not found', { replay_id: id });
    const { replay, cancelled } = result;
    if (!cancelled && replay.status !== 'cancelled') {
      throw new ConflictError(`DLQ replay is ${replay.status}: only a running replay can be cancelled`, { replay_id: replay.id, status: replay.status });
    }
    return dlqReplayToWire(replay);
  });
}

