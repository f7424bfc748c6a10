import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { API_KEY_ROLES, ConflictError, NotFoundError, ValidationError, type ApiKeyRole } from '@spool/protocol';
import { apiKeyCreate, apiKeyGet, apiKeyList, apiKeyRevoke, apiKeyUpdate, type Queryable } from '@spool/engine';
import type { AppContext } from '../app.js';
import { authOf, type AuthContext } from '../http/auth.js';
import { withinPlanLimit } from '../http/plan-limits.js';
import { ApiKeySummarySchema, CreatedApiKeySchema, apiKeyToWire } from '../wire/api-key.js';
import { DateTime, IdParams, nullable } from '../wire/common.js';

export const KeyName = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9 _.()-]+$' });
/** [] = every queue; "*" = every queue; "prefix*" = queues starting with prefix. */
export const KeyQueues = Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.*-]+$' }), { maxItems: 50 });
const KeyRateLimit = Type.Integer({ minimum: 1, maximum: 10_000 });
const KeyRole = Type.Unsafe<ApiKeyRole>({
  type: 'string',
  enum: [...API_KEY_ROLES],
  description: 'extension: admin (default: everything), producer (enqueue, read its jobs), worker (claim, heartbeat, complete, fail, register), read_only',
});

const CreateBody = Type.Object({
  name: KeyName,
  queues: Type.Optional(KeyQueues),
  rate_limit: Type.Optional(nullable(KeyRateLimit)),
  expires_at: Type.Optional(nullable(DateTime)),
  role: Type.Optional(KeyRole),
});
const UpdateBody = Type.Object({
  name: Type.Optional(KeyName),
  queues: Type.Optional(KeyQueues),
  rate_limit: Type.Optional(nullable(KeyRateLimit)),
  is_active: Type.Optional(Type.Boolean()),
  role: Type.Optional(KeyRole),
});


/** docs/compatibility.md §3.13. */
export function apiKeyRoutes(app: FastifyInstance, ctx: AppContext): void {
  const tags = ['api-keys'];

  app.get('/api-keys', {
    config: { operation: 'api_key.read' },
    schema: { tags, summary: "The organization's keys, revoked ones included, newest first", response: { 200: Type.Array(ApiKeySummarySchema) } },
  }, async (request) => (await apiKeyList(ctx.db, authOf(request).organizationId)).map(apiKeyToWire));

  app.post<{ Body: { name: string; queues?: string[]; rate_limit?: number | null; expires_at?: string | null; role?: ApiKeyRole } }>('/api-keys', {
    config: { operation: 'api_key.manage' },
    schema: { tags, summary: 'Create a key (the key is shown once)', body: CreateBody, response: { 201: CreatedApiKeySchema } },
  }, async (request, reply) => {
    const auth = authOf(request);
    const body = request.body;
    const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now()) throw new ValidationError('expires_at must be in the future', { field: 'expires_at' });
    const created = await withinPlanLimit(ctx, auth, 'api_keys', (db) => apiKeyCreate(db, {
      organizationId: auth.organizationId,
      name: body.name,
      queues: body.queues ?? [],
      rateLimit: body.rate_limit ?? null,
      expiresAt,
      role: body.role,
      environment: ctx.config.environment,
    }));
    if (!created) throw new NotFoundError('Organization not found');
    return reply.code(201).send({
      id: created.id, key: created.key, name: created.name, created_at: created.created_at.toISOString(), expires_at: created.expires_at?.toISOString() ?? null,
      queues: created.queues, role: created.role,
    });
  });

  app.get<{ Params: { id: string } }>('/api-keys/:id', {
    config: { operation: 'api_key.read' },
    schema: { tags, summary: 'Get a key (never the key itself)', params: IdParams, response: { 200: ApiKeySummarySchema } },
  }, async (request) => {
    const row = await apiKeyGet(ctx.db, authOf(request).organizationId, request.params.id);
    if (!row) throw new NotFoundError('API key not found');
    return apiKeyToWire(row);
  });

  app.put<{ Params: { id: string }; Body: { name?: string; queues?: string[]; rate_limit?: number | null; is_active?: boolean; role?: ApiKeyRole } }>('/api-keys/:id', {
    config: { operation: 'api_key.manage' },
    schema: { tags, summary: 'Change name, queues, role, rate limit or active flag (is_active: false revokes for good; a revoked key cannot be reactivated: 409)', params: IdParams, body: UpdateBody, response: { 200: ApiKeySummarySchema } },
  }, async (request) => {
    const auth = authOf(request);
    const body = request.body;
    const update = (db: Queryable) => apiKeyUpdate(db, auth.organizationId, request.params.id, {
      name: body.name,
      queues: body.queues,
      rateLimit: body.rate_limit,
      isActive: body.is_active,
      role: body.role,
    });
    // Re-activating a revoked key makes it count against max_api_keys again.
    const reactivates = body.is_active === true && (await apiKeyGet(ctx.db, auth.organizationId, request.params.id))?.is_active === false;
    const row = reactivates ? await withinPlanLimit(ctx, auth, 'api_keys', update) : await update(ctx.db);
    ctx.apiKeys.forget();
    if (!row) throw new NotFoundError('API key not found');
    if (row === 'refused') throw new ConflictError('This API key was revoked and cannot be reactivated; create a new key', { id: request.params.id });
    return apiKeyToWire(row);
  });

  app.delete<{ Params: { id: string } }>('/api-keys/:id', {
    config: { operation: 'api_key.manage' },
    schema: { tags, summary: 'Revoke a key: it and its tokens fail on their next request', params: IdParams, response: { 204: Type.Null() } },
  }, async (request, reply) => {
    const auth = authOf(request);
    const revoked = await apiKeyRevoke(ctx.db, auth.organizationId, request.params.id);
    ctx.apiKeys.forget();
    if (!revoked) throw new NotFoundError('API key not found');
    return reply.code(204).send();
  });
}
