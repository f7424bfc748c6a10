import type { FastifyInstance, FastifyRequest } from 'fastify';
import { canonicalId } from '@spool/engine';

/**
 * Request fields that carry server-generated ids (jobs, leases, workflows,
 * schedules, webhooks, keys, organizations). Worker ids are free text and
 * stay as sent; names (queues, workflow job keys) are case-sensitive and
 * never touched, which is why this is a list of fields and not every
 * UUID-shaped string.
 */
const ID_PARAMS = new Set(['id', 'job_id', 'delivery_id', 'org_id']);
const ID_FIELDS = new Set(['id', 'job_id', 'lease_id', 'parent_job_id', 'workflow_id', 'schedule_id', 'api_key_id', 'webhook_id', 'delivery_id']);
const ID_LIST_FIELDS = new Set(['ids', 'job_ids', 'depends_on_job_ids']);
/** Arrays of objects whose members are canonicalized like the body (batch complete/fail, bulk enqueue). */
const ITEM_ARRAYS = new Set(['items', 'jobs']);
const ID_QUERY = new Set(['job_id', 'workflow_id', 'schedule_id', 'parent_job_id']);

function canonicalFields(object: Record<string, unknown>): void {
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (ID_FIELDS.has(key)) object[key] = canonicalId(value);
    else if (ID_LIST_FIELDS.has(key) && Array.isArray(value)) object[key] = value.map((entry) => canonicalId(entry));
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Rewrites the id fields of one request in place (params, query and JSON body). */
export function canonicalizeRequestIds(request: Pick<FastifyRequest, 'params' | 'query' | 'body' | 'routeOptions'>, withBody = true): void {
  const params = request.params;
  if (isObject(params)) for (const key of Object.keys(params)) if (ID_PARAMS.has(key)) params[key] = canonicalId(params[key]);
  const query = request.query;
  if (isObject(query)) {
    for (const key of Object.keys(query)) {
      const value = query[key];
      if (ID_QUERY.has(key)) query[key] = canonicalId(value);
      // GET /jobs/status?ids=a,b,c
      else if (key === 'ids' && typeof value === 'string') query[key] = value.split(',').map((id) => canonicalId(id)).join(',');
    }
  }
  const body = request.body;
  if (!withBody || !isObject(body)) return;
  canonicalFields(body);
  // POST /jobs/{id}/dependencies names jobs by id in `depends_on` (the backend's spelling); workflows name keys there, inside `jobs`.
  if (Array.isArray(body.depends_on) && request.routeOptions.url?.endsWith('/dependencies')) body.depends_on = body.depends_on.map((entry) => canonicalId(entry));
  for (const key of ITEM_ARRAYS) {
    const items = body[key];
    if (Array.isArray(items)) for (const item of items) if (isObject(item)) canonicalFields(item);
  }
}

/**
 * Canonical ids before validation and before any handler, so every route
 * sees one spelling of each id (engine ids.ts, canonicalId): an upper-case
 * lease_id fences like the lower-case one, and the answer names the job as
 * the database does.
 */
export function installCanonicalIds(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    // An ingested body is the job's payload, stored byte for byte: its fields are not ours to respell.
    canonicalizeRequestIds(request, !request.routeOptions.url?.startsWith('/api/v1/webhooks/'));
  });
}
