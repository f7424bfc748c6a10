import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AccessDeniedError, NotFoundError, ValidationError } from '@spool/protocol';
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

const CreateBody = Type.Object({
  name: KeyName,
  queues: Type.Optional(KeyQueues),
  rate_limit: Type.Optional(nullable(KeyRateLimit)),
  expires_at: Type.Optional(nullable(DateTime)),
});
const UpdateBody = Type.Object({
  name: Type.Optional(KeyName),
  queues: Type.Optional(KeyQueues),
  rate_limit: Type.Optional(nullable(KeyRateLimit)),
  is_active: Type.Optional(Type.Boolean()),
});

function allQueues(queues: string[]): boolean {
  return queues.length === 0 || queues.includes('*');
}

/**
 * Only a key that may use every queue manages keys: otherwise a key limited
 * to one queue could mint itself a broader one.
 */
function assertMayManageKeys(auth: AuthContext): void {
  if (!allQueues(auth.queues)) throw new AccessDeniedError('Only an API key with access to every queue may create, change or revoke keys');
}

/** CONTRACT §3.13. */
export function apiKeyRoutes(app: FastifyInstance, ctx: AppContext): void {
  const tags = ['api-keys'];

  app.get('/api-keys', {
    schema: { tags, summary: "The organization's keys, revoked ones included, newest first", response: { 200: Type.Array(ApiKeySummarySchema) } },
  }, async (request) => (await apiKeyList(ctx.db, authOf(request).organizationId)).map(apiKeyToWire));

  app.post<{ Body: { name: string; queues?: string[]; rate_limit?: number | null; expires_at?: string | null } }>('/api-keys', {
    schema: { tags, summary: 'Create a key (the key is shown once)', body: CreateBody, response: { 201: CreatedApiKeySchema } },
  }, async (request, reply) => {
    const auth = authOf(request);
    const body = request.body;
    const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now()) throw new ValidationError('expires_at must be in the future', { field: 'expires_at' });
    assertMayManageKeys(auth);
    const created = await withinPlanLimit(ctx, auth, 'api_keys', (db) => apiKeyCreate(db, {
      organizationId: auth.organizationId,
      name: body.name,
      queues: body.queues ?? [],
      rateLimit: body.rate_limit ?? null,
      expiresAt,
      environment: ctx.config.environment,
    }));
    if (!created) throw new NotFoundError('Organization not found');
    return reply.code(201).send({ id: created.id, key: created.key, name: created.name, created_at: created.created_at.toISOString(), expires_at: created.expires_at?.toISOString() ?? null });
  });

  app.get<{ Params: { id: string } }>('/api-keys/:id', {
    schema: { tags, summary: 'Get a key (never the key itself)', params: IdParams, response: { 200: ApiKeySummarySchema } },
  }, async (request) => {
    const row = await apiKeyGet(ctx.db, authOf(request).organizationId, request.params.id);
    if (!row) throw new NotFoundError('API key not found');
    return apiKeyToWire(row);
  });

  app.put<{ Params: { id: string }; Body: { name?: string; queues?: string[]; rate_limit?: number | null; is_active?: boolean } }>('/api-keys/:id', {
    schema: { tags, summary: 'Change name, queues, rate limit or active flag', params: IdParams, body: UpdateBody, response: { 200: ApiKeySummarySchema } },
  }, async (request) => {
    const auth = authOf(request);
    assertMayManageKeys(auth);
    const body = request.body;
    const update = (db: Queryable) => apiKeyUpdate(db, auth.organizationId, request.params.id, {
      name: body.name,
      queues: body.queues,
      rateLimit: body.rate_limit,
      isActive: body.is_active,
    });
    // Re-activating a revoked key makes it count against max_api_keys again.
    const reactivates = body.is_active === true && (await apiKeyGet(ctx.db, auth.organizationId, request.params.id))?.is_active === false;
    const row = reactivates ? await withinPlanLimit(ctx, auth, 'api_keys', update) : await update(ctx.db);
    ctx.apiKeys.forget();
    if (!row) throw new NotFoundError('API key not found');
    return apiKeyToWire(row);
  });

  app.delete<{ Params: { id: string } }>('/api-keys/:id', {
    schema: { tags, summary: 'Revoke a key: it and its tokens fail on their next request', params: IdParams, response: { 204: Type.Null() } },
  }, async (request, reply) => {
    const auth = authOf(request);
    assertMayManageKeys(auth);
    const revoked = await apiKeyRevoke(ctx.db, auth.organizationId, request.params.id);
    ctx.apiKeys.forget();
    if (!revoked) throw new NotFoundError('API key not found');
    return reply.code(204).send();
  });
}
