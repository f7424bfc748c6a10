import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { PayloadTooLargeError, ValidationError } from '@spool/protocol';
import { JOB_LOG_LIMITS, jobLogAppend, jobLogList, jobProgressGet, jobProgressSet, type JobProgress } from '@spool/engine';
import type { AppContext } from '../app.js';
import { grantOf } from '../http/route-authorization.js';
import { IdParams, jsonBytes, nullable } from '../wire/common.js';
import { loadJob } from './jobs.js';
import { extensionInt } from '../http/warnings.js';
import { refuse } from './jobs-worker.js';

const WorkerId = Type.String({ minLength: 1, maxLength: 255 });
const LeaseId = Type.Optional(nullable(Type.String({ maxLength: 100 })));

const ProgressBody = Type.Object({
  worker_id: WorkerId,
  lease_id: LeaseId,
  percent: Type.Optional(nullable(Type.Number({ minimum: 0, maximum: 100, description: '0..100; omitted keeps the last value, null clears it' }))),
  message: Type.Optional(nullable(Type.String({ maxLength: JOB_LOG_LIMITS.messageChars, description: `at most ${JOB_LOG_LIMITS.messageChars} characters; omitted keeps the last one, null clears it` }))),
  metadata: Type.Optional(Type.Unknown({ description: `any JSON up to ${JOB_LOG_LIMITS.metadataBytes} bytes; omitted keeps the last value, null clears it` })),
});
type ProgressBody = Static<typeof ProgressBody>;

const LogsBody = Type.Object({
  worker_id: WorkerId,
  lease_id: LeaseId,
  lines: Type.Array(Type.String({ maxLength: JOB_LOG_LIMITS.lineChars }), {
    minItems: 1,
    maxItems: JOB_LOG_LIMITS.linesPerRequest,
    description: `1..${JOB_LOG_LIMITS.linesPerRequest} lines of at most ${JOB_LOG_LIMITS.lineChars} characters`,
  }),
});
type LogsBody = Static<typeof LogsBody>;

const ProgressSchema = Type.Object({
  percent: Type.Union([Type.Number(), Type.Null()]),
  message: Type.Union([Type.String(), Type.Null()]),
  metadata: Type.Unknown(),
  updated_at: Type.String({ format: 'date-time' }),
});
const LogLineSchema = Type.Object({
  seq: Type.Integer({ description: 'position in the log (increases with time; pass as `after` to read on)' }),
  at: Type.String({ format: 'date-time' }),
  line: Type.String(),
});

function progressToWire(row: JobProgress): Static<typeof ProgressSchema> {
  return { percent: row.percent, message: row.message, metadata: row.metadata ?? null, updated_at: row.updated_at.toISOString() };
}

const LIST_MAX = JOB_LOG_LIMITS.linesPerJob;

/**
 * Extension: a running job's progress and log lines, reported
 * by the worker holding it and fenced like its heartbeat (404 not owned, 409
 * LEASE_EXPIRED for a stale lease), kept beside the job and deleted with it.
 */
export function jobProgressRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Params: { id: string }; Body: ProgressBody }>('/jobs/:id/progress', {
    config: { operation: 'job.heartbeat', addresses: 'job' },
    schema: {
      tags: ['worker', 'extension'],
      summary: 'Extension: report the progress of a job this worker holds (fenced like heartbeat)',
      description: 'Announced as the realtime event job.progress. Does not extend the lease.',
      params: IdParams,
      body: ProgressBody,
      response: { 200: Type.Object({ success: Type.Boolean(), progress: ProgressSchema }) },
    },
  }, async (request, reply) => {
    const { organizationId } = grantOf(request);
    // Ids are compared as text in places: one canonical spelling.
    const id = request.params.id.toLowerCase();
    const body = request.body;
    if (body.percent === undefined && body.message === undefined && body.metadata === undefined) {
      throw new ValidationError('Send at least one of percent, message or metadata', { fields: ['percent', 'message', 'metadata'] });
    }
    if (body.metadata !== undefined && body.metadata !== null && jsonBytes(body.metadata) > JOB_LOG_LIMITS.metadataBytes) {
      throw new PayloadTooLargeError(`metadata exceeds ${JOB_LOG_LIMITS.metadataBytes} bytes of JSON: send a smaller summary`, { field: 'metadata', limit: JOB_LOG_LIMITS.metadataBytes });
    }
    const outcome = await jobProgressSet(ctx.db, {
      organizationId, id, workerId: body.worker_id, leaseId: body.lease_id, percent: body.percent, message: body.message, metadata: body.metadata,
    });
    if (!outcome.ok) return refuse(reply, outcome.reason, id, body.lease_id != null);
    return { success: true, progress: progressToWire(outcome.progress) };
  });

  app.post<{ Params: { id: string }; Body: LogsBody }>('/jobs/:id/logs', {
    config: { operation: 'job.heartbeat', addresses: 'job' },
    schema: {
      tags: ['worker', 'extension'],
      summary: 'Extension: append log lines to a job this worker holds (fenced like heartbeat)',
      description: `The job keeps its newest ${JOB_LOG_LIMITS.linesPerJob} lines within ${JOB_LOG_LIMITS.bytesPerJob / 1024} KiB; older lines are dropped (\`dropped\` counts them). Announced as the realtime event job.log.`,
      params: IdParams,
      body: LogsBody,
      response: {
        200: Type.Object({
          success: Type.Boolean(),
          written: Type.Integer({ description: 'lines stored' }),
          dropped: Type.Integer({ description: 'older lines deleted, and lines of this request not kept, to stay within the per-job bound' }),
        }),
      },
    },
  }, async (request, reply) => {
    const { organizationId } = grantOf(request);
    const id = request.params.id.toLowerCase();
    const body = request.body;
    const outcome = await jobLogAppend(ctx.db, { organizationId, id, workerId: body.worker_id, leaseId: body.lease_id, lines: body.lines });
    if (!outcome.ok) return refuse(reply, outcome.reason, id, body.lease_id != null);
    return { success: true, written: outcome.written, dropped: outcome.dropped };
  });

  app.get<{ Params: { id: string } }>('/jobs/:id/progress', {
    config: { operation: 'job.read', addresses: 'job' },
    schema: {
      tags: ['jobs', 'extension'],
      summary: 'Extension: the progress the job\'s worker last reported ({ progress: null } when none)',
      params: IdParams,
      response: { 200: Type.Object({ job_id: Type.String(), progress: Type.Union([ProgressSchema, Type.Null()]) }) },
    },
  }, async (request) => {
    const { organizationId } = grantOf(request);
    const job = await loadJob(ctx, organizationId, request.params.id.toLowerCase());
    const row = await jobProgressGet(ctx.db, organizationId, job.id);
    return { job_id: job.id, progress: row ? progressToWire(row) : null };
  });

  app.get<{ Params: { id: string }; Querystring: { after?: string; limit?: string } }>('/jobs/:id/logs', {
    config: { operation: 'job.read', addresses: 'job' },
    schema: {
      tags: ['jobs', 'extension'],
      summary: `Extension: the job's log lines after seq \`after\` (default 0), oldest first (limit 1..${LIST_MAX}, default ${LIST_MAX})`,
      params: IdParams,
      querystring: Type.Object({ after: Type.Optional(Type.String()), limit: Type.Optional(Type.String()) }),
      response: { 200: Type.Object({ job_id: Type.String(), lines: Type.Array(LogLineSchema) }) },
    },
  }, async (request) => {
    const { organizationId } = grantOf(request);
    const job = await loadJob(ctx, organizationId, request.params.id.toLowerCase());
    const after = extensionInt('after', request.query.after, 0, 0, Number.MAX_SAFE_INTEGER);
    const lines = await jobLogList(ctx.db, organizationId, job.id, after, extensionInt('limit', request.query.limit, LIST_MAX, 1, LIST_MAX));
    return { job_id: job.id, lines: lines.map((l) => ({ seq: l.seq, at: l.at.toISOString(), line: l.line })) };
  });
}
