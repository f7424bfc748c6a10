import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { jobHistory } from '@spool/engine';
import type { AppContext } from '../app.js';
import { grantOf } from '../http/route-authorization.js';
import { IdParams } from '../wire/common.js';
import { extensionInt } from '../http/warnings.js';
import { loadJob } from './jobs.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);

const HistoryEntrySchema = Type.Object({
  id: Type.Integer({ description: 'position in the history log (increases with time)' }),
  event: Type.String({ description: 'what happened: create, claim, complete, fail_retry, fail_final, cancel, retry, lease_expired, timeout, snooze, …' }),
  from_status: NullableString,
  to_status: NullableString,
  worker_id: NullableString,
  lease_id: NullableString,
  message: NullableString,
  created_at: Type.String({ format: 'date-time' }),
});

const HISTORY_DEFAULT = 500;
const HISTORY_MAX = 1000;

/**
 * Extension: `GET /jobs/{id}/history`, the transitions of one job oldest
 * first (the dashboard's timeline). Unknown jobs are a 404 like `GET /jobs/{id}`.
 */
export function jobHistoryRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Params: { id: string }; Querystring: { limit?: string } }>('/jobs/:id/history', {
    config: { operation: 'job.read', addresses: 'job' },
    schema: {
      tags: ['jobs', 'extension'],
      summary: 'Extension: the recorded transitions of a job, oldest first (limit 1..1000, default 500)',
      params: IdParams,
      querystring: Type.Object({ limit: Type.Optional(Type.String()) }),
      response: { 200: Type.Array(HistoryEntrySchema) },
    },
  }, async (request) => {
    const { organizationId } = grantOf(request);
    const job = await loadJob(ctx, organizationId, request.params.id.toLowerCase());
    const rows = await jobHistory(ctx.db, organizationId, job.id, extensionInt('limit', request.query.limit, HISTORY_DEFAULT, 1, HISTORY_MAX));
    return rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() }));
  });
}
