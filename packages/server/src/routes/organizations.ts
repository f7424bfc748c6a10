import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AccessDeniedError, ConflictError, LIMITS, NotFoundError, PayloadTooLargeError, ValidationError } from '@spool/protocol';
import {
  apiKeyList,
  generateWebhookToken,
  isUuid,
  organizationCreate,
  organizationDelete,
  organizationGet,
  organizationSetWebhookToken,
  organizationSlugsTaken,
  organizationUpdate,
  organizationWebhookSecretDelete,
  organizationWebhookSecretList,
  organizationWebhookSecretSet,
  WEBHOOK_PROVIDERS,
  type OrganizationRow,
  type WebhookProvider,
} from '@spool/engine';
import type { AppContext } from '../app.js';
import { adminCredential, adminKeyMatches } from '../http/admin-auth.js';
import { authOf } from '../http/auth.js';
import { secretBoxOf, webhookSecretOwner } from '../secret-box.js';
import { availableSlug, SLUG_MAX, SLUG_MIN, SLUG_PATTERN, slugProblem } from '../slug.js';
import { usageInfos } from '../usage.js';
import { IdParams, jsonBytes, nullable } from '../wire/common.js';
import { CreatedOrganizationSchema, OrganizationSchema, OrganizationSummarySchema, organizationSummaryToWire, organizationToWire } from '../wire/organization.js';
import { UsageInfoSchema, usageInfoToWire } from '../wire/usage.js';

export const OrganizationName = Type.String({ minLength: 3, maxLength: 100 });
export const Slug = Type.String({ minLength: SLUG_MIN, maxLength: SLUG_MAX, pattern: SLUG_PATTERN });
export const BillingEmail = Type.String({ format: 'email', maxLength: 255 });
export const Settings = Type.Record(Type.String(), Type.Unknown());

const CreateBody = Type.Object({ name: OrganizationName, slug: Slug, billing_email: Type.Optional(nullable(BillingEmail)) });
const UpdateBody = Type.Object({
  name: Type.Optional(OrganizationName),
  billing_email: Type.Optional(nullable(BillingEmail)),
  settings: Type.Optional(Settings),
});
const MemberSchema = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  email: Type.String(),
  name: Type.String(),
  role: Type.String(),
  joined_at: Type.String({ format: 'date-time' }),
  invited_by: Type.Union([Type.String(), Type.Null()]),
});
const CheckSlugResponse = Type.Object({
  available: Type.Boolean(),
  valid: Type.Boolean(),
  error: Type.Union([Type.String(), Type.Null()]),
  suggestion: Type.Union([Type.String(), Type.Null()]),
});
const WebhookTokenResponse = Type.Object({
  token: Type.Union([Type.String(), Type.Null()]),
  webhook_token: Type.Union([Type.String(), Type.Null()]),
  webhook_url: Type.String(),
});

const WebhookSecretStatus = Type.Object({
  provider: Type.String(),
  configured: Type.Boolean(),
  updated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  webhook_url: Type.String(),
});
const WebhookSecretsResponse = Type.Object({ github: WebhookSecretStatus, stripe: WebhookSecretStatus });
const ProviderParams = Type.Object({ provider: Type.String({ maxLength: 50 }) });
const WebhookSecretBody = Type.Object({ secret: Type.String({ minLength: 1, maxLength: 1024 }) });

function providerOf(name: string): WebhookProvider {
  const provider = WEBHOOK_PROVIDERS.find((known) => known === name);
  if (!provider) throw new NotFoundError(`Unknown webhook provider "${name}": use ${WEBHOOK_PROVIDERS.join(' or ')}`);
  return provider;
}

function webhookSecretStatus(request: FastifyRequest, organizationId: string, provider: WebhookProvider, updatedAt: Date | undefined) {
  return {
    provider,
    configured: updatedAt !== undefined,
    updated_at: updatedAt?.toISOString() ?? null,
    webhook_url: `${request.protocol}://${request.host}/api/v1/webhooks/${organizationId}/${provider}`,
  };
}

/** 400 for a reserved slug (the pattern and length are checked by the schema). */
export function assertSlugUsable(slug: string, field = 'slug'): void {
  const problem = slugProblem(slug);
  if (problem) throw new ValidationError(problem.replace(/^slug/, field), { field });
}

/** settings are passed through verbatim but bounded like tags. */
export function assertSettingsSize(settings: unknown, field = 'settings'): void {
  if (settings !== undefined && jsonBytes(settings) > LIMITS.tagsBytesMax) {
    throw new PayloadTooLargeError(`${field} must be at most ${LIMITS.tagsBytesMax} bytes of JSON`, { field, limit: LIMITS.tagsBytesMax });
  }
}

/** Turns the unique-slug violation into a 409 that says what clashed. */
export async function withSlugConflict<T>(slug: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw new ConflictError(`An organization with slug "${slug}" already exists`, { field: 'slug' });
    throw err;
  }
}

/** The caller's own organization; any other id (or a malformed one) is 404. */
async function ownOrganization(ctx: AppContext, request: FastifyRequest, id: string): Promise<OrganizationRow> {
  const auth = authOf(request);
  const row = isUuid(id) && id.toLowerCase() === auth.organizationId ? await organizationGet(ctx.db, auth.organizationId) : null;
  if (!row) throw new NotFoundError('Organization not found');
  return row;
}

function webhookTokenOf(row: OrganizationRow): string | null {
  const token = (row.settings as Record<string, unknown> | null)?.webhook_token;
  return typeof token === 'string' ? token : null;
}

function webhookTokenBody(request: FastifyRequest, row: OrganizationRow) {
  const token = webhookTokenOf(row);
  return { token, webhook_token: token, webhook_url: `${request.protocol}://${request.host}/api/v1/webhooks/${row.id}/custom` };
}

/** POST /organizations: public registration, subject to REGISTRATION_MODE. */
export function organizationPublicRoutes(app: FastifyInstance, ctx: AppContext): void {
  const admin = adminCredential(ctx.config, ctx.metricsToken);
  app.post<{ Body: { name: string; slug: string; billing_email?: string | null } }>('/organizations', {
    schema: {
      tags: ['organizations'],
      summary: 'Register an organization; returns its first API key (shown once). With REGISTRATION_MODE=closed it needs X-Admin-Key.',
      security: [],
      body: CreateBody,
      response: { 201: CreatedOrganizationSchema },
    },
  }, async (request, reply) => {
    if (ctx.config.registrationMode === 'closed' && !adminKeyMatches(request, admin)) {
      throw new AccessDeniedError('Registration is closed on this server; ask the operator (X-Admin-Key) to create your organization');
    }
    const body = request.body;
    assertSlugUsable(body.slug);
    const created = await withSlugConflict(body.slug, () => organizationCreate(ctx.db, {
      name: body.name,
      slug: body.slug,
      planTier: ctx.config.defaultPlan,
      billingEmail: body.billing_email ?? null,
      environment: ctx.config.environment,
    }));
    return reply.code(201).send({ organization: organizationToWire(created.organization), api_key: { ...created.apiKey, created_at: created.apiKey.created_at.toISOString() } });
  });
}

/** docs/compatibility.md §3.14 routes of the caller's own organization. */
export function organizationRoutes(app: FastifyInstance, ctx: AppContext): void {
  const tags = ['organizations'];

  app.get('/organizations', {
    config: { operation: 'organization.read' },
    schema: { tags, summary: "The caller's organization (a list of one)", response: { 200: Type.Array(OrganizationSummarySchema) } },
  }, async (request) => {
    const row = await organizationGet(ctx.db, authOf(request).organizationId);
    return row ? [organizationSummaryToWire(row)] : [];
  });

  app.get('/organizations/usage', {
    config: { operation: 'organization.read' },
    schema: { tags, summary: 'Plan, limits, current usage and warnings', response: { 200: UsageInfoSchema } },
  }, async (request) => {
    const row = await organizationGet(ctx.db, authOf(request).organizationId);
    if (!row) throw new NotFoundError('Organization not found');
    return usageInfoToWire((await usageInfos(ctx.db, [row])).get(row.id)!);
  });

  app.get<{ Querystring: { slug: string } }>('/organizations/check-slug', {
    config: { operation: 'organization.slug' },
    schema: { tags, summary: 'Whether a slug is valid and free (with a suggestion when not)', querystring: Type.Object({ slug: Type.String({ maxLength: 200 }) }), response: { 200: CheckSlugResponse } },
  }, async (request) => {
    const slug = request.query.slug;
    const problem = slugProblem(slug);
    if (problem) return { available: false, valid: false, error: problem, suggestion: await availableSlug(ctx.db, slug) };
    const taken = await organizationSlugsTaken(ctx.db, [slug]);
    if (taken.has(slug)) return { available: false, valid: true, error: 'slug is already taken', suggestion: await availableSlug(ctx.db, slug) };
    return { available: true, valid: true, error: null, suggestion: null };
  });

  app.post<{ Body: { name: string } }>('/organizations/generate-slug', {
    config: { operation: 'organization.slug' },
    schema: { tags, summary: 'A valid, unused slug derived from a name', body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }), response: { 200: Type.Object({ slug: Type.String() }) } },
  }, async (request) => ({ slug: await availableSlug(ctx.db, request.body.name) }));

  app.get('/organizations/webhook-token', {
    config: { operation: 'organization.webhook_token' },
    schema: { tags, summary: 'The token incoming webhooks must present (X-Webhook-Token)', response: { 200: WebhookTokenResponse } },
  }, async (request) => {
    const row = await organizationGet(ctx.db, authOf(request).organizationId);
    if (!row) throw new NotFoundError('Organization not found');
    return webhookTokenBody(request, row);
  });

  app.post('/organizations/webhook-token/regenerate', {
    config: { operation: 'organization.webhook_token' },
    schema: { tags, summary: 'Replace the incoming-webhook token (the old one stops working at once)', response: { 200: WebhookTokenResponse } },
  }, async (request) => {
    const row = await organizationSetWebhookToken(ctx.db, authOf(request).organizationId, generateWebhookToken());
    if (!row) throw new NotFoundError('Organization not found');
    return webhookTokenBody(request, row);
  });

  app.post('/organizations/webhook-token/clear', {
    config: { operation: 'organization.webhook_token' },
    schema: { tags, summary: 'Remove the incoming-webhook token: custom ingestion is off until a new one is generated', body: Type.Object({ confirm: Type.Optional(Type.Boolean()) }), response: { 204: Type.Null() } },
  }, async (request, reply) => {
    const row = await organizationSetWebhookToken(ctx.db, authOf(request).organizationId, null);
    if (!row) throw new NotFoundError('Organization not found');
    return reply.code(204).send();
  });

  // org-admin operation: the signing secrets are the organization's
  // credential for GitHub and Stripe ingestion. Never returned once set.
  app.get('/organizations/webhook-secrets', {
    config: { operation: 'organization.read' },
    schema: { tags: [...tags, 'extension'], summary: 'Extension: whether a GitHub and a Stripe signing secret are set (never the secrets), with the URLs to give the providers', response: { 200: WebhookSecretsResponse } },
  }, async (request) => {
    const organizationId = authOf(request).organizationId;
    const set = await organizationWebhookSecretList(ctx.db, organizationId);
    return {
      github: webhookSecretStatus(request, organizationId, 'github', set.get('github')),
      stripe: webhookSecretStatus(request, organizationId, 'stripe', set.get('stripe')),
    };
  });

  // org-admin operation.
  app.put<{ Params: { provider: string }; Body: { secret: string } }>('/organizations/webhook-secrets/:provider', {
    config: { operation: 'organization.webhook_token' },
    schema: {
      tags: [...tags, 'extension'],
      summary: "Extension: set the organization's signing secret for github or stripe (stored encrypted; replaces the previous one at once)",
      params: ProviderParams,
      body: WebhookSecretBody,
      response: { 200: WebhookSecretStatus },
    },
  }, async (request) => {
    const provider = providerOf(request.params.provider);
    const organizationId = authOf(request).organizationId;
    const sealed = secretBoxOf(ctx.config).seal(request.body.secret, webhookSecretOwner(organizationId, provider));
    const row = await organizationWebhookSecretSet(ctx.db, organizationId, provider, sealed);
    return webhookSecretStatus(request, organizationId, provider, row.updated_at);
  });

  // org-admin operation.
  app.delete<{ Params: { provider: string } }>('/organizations/webhook-secrets/:provider', {
    config: { operation: 'organization.webhook_token' },
    schema: { tags: [...tags, 'extension'], summary: "Extension: remove the organization's github or stripe signing secret (that provider's deliveries are then refused)", params: ProviderParams, response: { 204: Type.Null() } },
  }, async (request, reply) => {
    const provider = providerOf(request.params.provider);
    await organizationWebhookSecretDelete(ctx.db, authOf(request).organizationId, provider);
    return reply.code(204).send();
  });

  app.get<{ Params: { id: string } }>('/organizations/:id', {
    config: { operation: 'organization.read' },
    schema: { tags, summary: 'Get the organization', params: IdParams, response: { 200: OrganizationSchema } },
  }, async (request) => organizationToWire(await ownOrganization(ctx, request, request.params.id)));

  app.put<{ Params: { id: string }; Body: { name?: string; billing_email?: string | null; settings?: Record<string, unknown> } }>('/organizations/:id', {
    config: { operation: 'organization.manage' },
    schema: { tags, summary: 'Update name, billing email or settings (the webhook token is kept)', params: IdParams, body: UpdateBody, response: { 200: OrganizationSchema } },
  }, async (request) => {
    const own = await ownOrganization(ctx, request, request.params.id);
    assertSettingsSize(request.body.settings);
    const row = await organizationUpdate(ctx.db, own.id, { name: request.body.name, billingEmail: request.body.billing_email, settings: request.body.settings });
    if (!row) throw new NotFoundError('Organization not found');
    return organizationToWire(row);
  });

  app.delete<{ Params: { id: string } }>('/organizations/:id', {
    config: { operation: 'organization.manage' },
    schema: { tags, summary: 'Delete the organization and everything it owns (409 while it has active jobs, live workers or active schedules)', params: IdParams, response: { 204: Type.Null() } },
  }, async (request, reply) => {
    const own = await ownOrganization(ctx, request, request.params.id);
    const result = await organizationDelete(ctx.db, own.id);
    ctx.apiKeys.forget();
    if (result.blockers) {
      const b = result.blockers;
      throw new ConflictError(`Organization still has ${b.active_jobs} active jobs, ${b.live_workers} live workers and ${b.active_schedules} active schedules`, { ...b });
    }
    if (!result.deleted) throw new NotFoundError('Organization not found');
    return reply.code(204).send();
  });

  app.get<{ Params: { id: string } }>('/organizations/:id/members', {
    config: { operation: 'organization.read' },
    schema: { tags, summary: 'Members: one per active API key (owner when it may use every queue)', params: IdParams, response: { 200: Type.Array(MemberSchema) } },
  }, async (request) => {
    const own = await ownOrganization(ctx, request, request.params.id);
    const keys = await apiKeyList(ctx.db, own.id);
    return keys.filter((key) => key.is_active).map((key) => ({
      id: key.id,
      user_id: key.id,
      email: own.billing_email ?? '',
      name: key.name,
      role: key.queues.length === 0 || key.queues.includes('*') ? 'owner' : 'member',
      joined_at: key.created_at.toISOString(),
      invited_by: null,
    }));
  });
}
