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
  event: Type.String({ description: 'what happened: create, claim, complete, fail_retry, fail_final, cancel, retry, lease_expired, timeout, snooze, edit, debounce, replace, …' }),
  from_status: NullableString,
  to_status: NullableString,
  worker_id: NullableString,
  lease_id: NullableString,
  message: NullableString,
  created_at: Type.String({ format: 'date-time' }),
  actor: Type.Union([Type.String(), Type.Null()], {
    description: 'extension: the credential that asked for the change (an edit or priority change, a job key\'s debounce or replace, or a retry, DLQ replay or purge, cancel, or workflow cancel or retry through the API): api_key:<key id>, or api_key:<key id>/session:<session id> for an access token; null for the server\'s own transitions and for rows written before Spool recorded it',
  }),
  details: Type.Union([Type.Object({
    reason: Type.Literal('parent_failed'),
    parent_id: Type.String({ description: 'the dependency whose final failure cancelled this job' }),
    parent_status: Type.String({ description: 'how it ended: deadletter, failed or cancelled' }),
    on_parent_failure: Type.Literal('cancel', { description: 'the edge\'s policy that made the cancel' }),
  }), Type.Object({
    replay_id: Type.Optional(Type.String({ description: 'a `retry` of a paced DLQ replay: the replay (GET /jobs/dlq/replays/{id})' })),
    fields: Type.Optional(Type.Array(Type.String(), { description: 'the fields the edit, a job key\'s debounce or replace, or the replay\'s edits changed' })),
    from: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'old values of the changed status, priority, queue_name, max_retries and scheduled_at (payload and tags are only named in fields)' })),
    to: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'their new values' })),
  }), Type.Null()], { description: 'extension: why the server cancelled a job for a dependency (a `cancel` with reason parent_failed, docs/workflows.md "When a parent fails"); what an `edit`, `debounce` or `replace` (job_key policies) changed (fields, from, to); of a `retry` by a paced DLQ replay, the replay_id and what its edits changed; null for other events' }),
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
