import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { NotFoundError, ValidationError } from '@spool/protocol';
import {
  apiKeyCreate,
  organizationCreate,
  organizationDelete,
  organizationGet,
  organizationJobTotal,
  organizationList,
  organizationQuotaReset,
  organizationUpdate,
  platformStats,
  ORGANIZATION_SORT_COLUMNS,
  type OrganizationRow,
} from '@spool/engine';
import type { AppContext } from '../app.js';
import { adminCredential, requireAdmin } from '../http/admin-auth.js';
import { contractChoice, contractInt } from '../http/warnings.js';
import { allPlans, PLAN_TIERS, planLimits, planLimitsToWire, wirePlanTier } from '../plans.js';
import { usageInfos } from '../usage.js';
import { IdParams, nullable } from '../wire/common.js';
import { CreatedKeySchema, CreatedOrganizationSchema, OrganizationSchema, organizationToWire } from '../wire/organization.js';
import { PlanLimitsSchema, UsageInfoSchema, usageInfoToWire } from '../wire/usage.js';
import { KeyName, KeyQueues } from './api-keys.js';
import { assertSettingsSize, assertSlugUsable, BillingEmail, OrganizationName, Settings, Slug, withSlugConflict } from './organizations.js';

const Timestamp = Type.String({ format: 'date-time' });
const NullableString = Type.Union([Type.String(), Type.Null()]);
const PlanTierSchema = Type.Union(PLAN_TIERS.map((tier) => Type.Literal(tier)));

const ListQuery = Type.Object({
  plan_tier: Type.Optional(Type.String({ maxLength: 50 })),
  search: Type.Optional(Type.String({ maxLength: 100 })),
  limit: Type.Optional(Type.Integer()),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
  sort_by: Type.Optional(Type.String({ maxLength: 50 })),
  sort_order: Type.Optional(Type.String({ maxLength: 10 })),
});
/** What `?plan_tier=` filters by: the stored tiers, `unlimited` included, and soft-deleted organizations. */
const LISTED_TIERS = [...PLAN_TIERS, 'deleted'] as const;
const UnlimitedFlag = Type.Boolean({ description: 'extension: on Spool\'s unlimited plan (plan_tier is then sent as enterprise; filter and PATCH with plan_tier=unlimited)' });
const AdminUsage = Type.Object({ jobs_today: Type.Integer(), active_jobs: Type.Integer(), queues: Type.Integer(), workers: Type.Integer(), api_keys: Type.Integer() });
const ListResponse = Type.Object({
  organizations: Type.Array(Type.Object({
    id: Type.String(), name: Type.String(), slug: Type.String(), plan_tier: Type.String(), billing_email: NullableString,
    created_at: Timestamp, updated_at: Timestamp, usage: AdminUsage, unlimited: UnlimitedFlag,
  })),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
});
const DetailResponse = Type.Object({
  id: Type.String(), name: Type.String(), slug: Type.String(), plan_tier: Type.String(), billing_email: NullableString,
  settings: Type.Unknown(), custom_limits: Type.Unknown(), created_at: Timestamp, updated_at: Timestamp,
  usage_info: UsageInfoSchema, api_keys_count: Type.Integer(), total_jobs: Type.Integer(), unlimited: UnlimitedFlag,
});
const CreateBody = Type.Object({ name: OrganizationName, slug: Slug, billing_email: Type.Optional(nullable(BillingEmail)), plan_tier: Type.Optional(PlanTierSchema) });
const CustomLimits = Type.Record(Type.String(), Type.Unknown());
const PatchBody = Type.Object({
  plan_tier: Type.Optional(PlanTierSchema),
  billing_email: Type.Optional(nullable(BillingEmail)),
  settings: Type.Optional(Settings),
  custom_limits: Type.Optional(nullable(CustomLimits)),
});
const StatsResponse = Type.Object({
  organizations: Type.Object({ total: Type.Integer(), by_plan: Type.Array(Type.Object({ plan: Type.String(), count: Type.Integer() })), created_today: Type.Integer(), created_this_week: Type.Integer() }),
  jobs: Type.Object({ total_active: Type.Integer(), pending: Type.Integer(), processing: Type.Integer(), completed_24h: Type.Integer(), failed_24h: Type.Integer() }),
  workers: Type.Object({ total: Type.Integer(), healthy: Type.Integer(), degraded: Type.Integer() }),
  system: Type.Object({ api_version: Type.String(), uptime_seconds: Type.Integer() }),
});

type PatchBody = { plan_tier?: string; billing_email?: string | null; settings?: Record<string, unknown>; custom_limits?: Record<string, unknown> | null };

/** custom_limits are stored verbatim, but the keys Spool reads must hold a non-negative integer or null. */
function assertCustomLimits(custom: Record<string, unknown> | null | undefined): void {
  if (!custom) return;
  assertSettingsSize(custom, 'custom_limits');
  const known = new Set(Object.keys(planLimits('free')));
  for (const [key, value] of Object.entries(custom)) {
    if (!known.has(key) || key === 'tier' || key === 'display_name') continue;
    if (value !== null && !(typeof value === 'number' && Number.isInteger(value) && value >= 0)) {
      throw new ValidationError(`custom_limits.${key} must be a non-negative integer or null`, { field: `custom_limits.${key}` });
    }
  }
}

async function existing(ctx: AppContext, id: string): Promise<OrganizationRow> {
  const row = await organizationGet(ctx.db, id);
  if (!row) throw new NotFoundError('Organization not found');
  return row;
}

function listRoutes(app: FastifyInstance, ctx: AppContext, tags: string[]): void {
  app.get<{ Querystring: { plan_tier?: string; search?: string; limit?: number; offset?: number; sort_by?: string; sort_order?: string } }>('/organizations', {
    schema: { tags, summary: 'Every organization, with usage (enveloped, paged)', querystring: ListQuery, response: { 200: ListResponse } },
  }, async (request, reply) => {
    const q = request.query;
    const limit = contractInt(reply, 'limit', q.limit, 50, 1, 100);
    const offset = q.offset ?? 0;
    // Like the contract's other lists: an unknown sort or filter value is ignored, and the Warning header says so.
    const sortBy = contractChoice(reply, 'sort_by', q.sort_by, ORGANIZATION_SORT_COLUMNS, 'sorted by created_at') ?? 'created_at';
    const sortOrder = contractChoice(reply, 'sort_order', q.sort_order?.toLowerCase(), ['asc', 'desc'] as const, 'sorted descending') ?? 'desc';
    const planTier = contractChoice(reply, 'plan_tier', q.plan_tier, LISTED_TIERS);
    const { rows, total } = await organizationList(ctx.db, { planTier, search: q.search || null, sortBy, sortOrder, limit, offset });
    const usage = await usageInfos(ctx.db, rows);
    const organizations = rows.map((row) => {
      const u = usage.get(row.id)!.usage;
      return {
        id: row.id, name: row.name, slug: row.slug, plan_tier: wirePlanTier(row.plan_tier), billing_email: row.billing_email,
        created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(), unlimited: row.plan_tier === 'unlimited',
        usage: { jobs_today: u.jobs_today.current, active_jobs: u.active_jobs.current, queues: u.queues.current, workers: u.workers.current, api_keys: u.api_keys.current },
      };
    });
    return { organizations, total, limit, offset };
  });

  app.get('/stats', {
    schema: { tags, summary: 'Platform-wide figures', response: { 200: StatsResponse } },
  }, async () => {
    const s = await platformStats(ctx.db);
    return {
      organizations: { total: s.organizations_total, by_plan: s.by_plan, created_today: s.created_today, created_this_week: s.created_this_week },
      jobs: { total_active: s.pending + s.processing + s.scheduled, pending: s.pending, processing: s.processing, completed_24h: s.completed_24h, failed_24h: s.failed_24h },
      workers: { total: s.workers_total, healthy: s.workers_healthy, degraded: s.workers_degraded },
      system: { api_version: ctx.version, uptime_seconds: Math.floor((Date.now() - ctx.startedAt.getTime()) / 1000) },
    };
  });

  app.get('/doctor', {
    schema: {
      tags,
      summary: 'The queue doctor: what holds back vacuum, hot-table bloat, claim p99 and expired leases, each with a hint (docs/observability.md)',
      response: {
        200: Type.Object({
          checked_at: Timestamp,
          status: Type.String({ description: 'the worst status of the checks: ok, warn or critical' }),
          checks: Type.Array(Type.Object({ name: Type.String(), status: Type.String(), value: Type.Union([Type.Number(), Type.Null()]), hint: Type.String() })),
        }),
      },
    },
  }, async () => {
    const { checkedAt, checks } = await ctx.metrics.doctor();
    return { checked_at: checkedAt.toISOString(), status: checks[0]?.status ?? 'ok', checks };
  });

  app.get('/plans', {
    schema: {
      tags,
      summary: 'Every plan and its limits (Spool\'s `unlimited` plan for self-hosting is sent as tier `enterprise` with `unlimited: true` and `spool_tier: "unlimited"`)',
      response: { 200: Type.Array(PlanLimitsSchema) },
    },
  }, async () => allPlans().map(planLimitsToWire));
}

function organizationAdminRoutes(app: FastifyInstance, ctx: AppContext, tags: string[]): void {
  app.post<{ Body: { name: string; slug: string; billing_email?: string | null; plan_tier?: string } }>('/organizations', {
    schema: { tags, summary: 'Create an organization on any plan (default: DEFAULT_PLAN)', body: CreateBody, response: { 201: CreatedOrganizationSchema } },
  }, async (request, reply) => {
    const body = request.body;
    assertSlugUsable(body.slug);
    const created = await withSlugConflict(body.slug, () => organizationCreate(ctx.db, {
      name: body.name, slug: body.slug, planTier: body.plan_tier ?? ctx.config.defaultPlan, billingEmail: body.billing_email ?? null, environment: ctx.config.environment,
    }));
    return reply.code(201).send({ organization: organizationToWire(created.organization), api_key: { ...created.apiKey, created_at: created.apiKey.created_at.toISOString() } });
  });

  app.get<{ Params: { id: string } }>('/organizations/:id', {
    schema: { tags, summary: 'An organization with its usage', params: IdParams, response: { 200: DetailResponse } },
  }, async (request) => {
    const row = await existing(ctx, request.params.id);
    const [usage, totalJobs] = await Promise.all([usageInfos(ctx.db, [row]), organizationJobTotal(ctx.db, row.id)]);
    const info = usage.get(row.id)!;
    return {
      id: row.id, name: row.name, slug: row.slug, plan_tier: wirePlanTier(row.plan_tier), billing_email: row.billing_email,
      settings: row.settings ?? {}, custom_limits: row.custom_limits ?? null,
      created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(), unlimited: row.plan_tier === 'unlimited',
      usage_info: usageInfoToWire(info), api_keys_count: info.usage.api_keys.current, total_jobs: totalJobs,
    };
  });

  app.patch<{ Params: { id: string }; Body: PatchBody }>('/organizations/:id', {
    schema: { tags, summary: 'Change plan, billing email, settings or custom limits', params: IdParams, body: PatchBody, response: { 200: OrganizationSchema } },
  }, async (request) => {
    const body = request.body;
    assertSettingsSize(body.settings);
    assertCustomLimits(body.custom_limits);
    const row = await organizationUpdate(ctx.db, (await existing(ctx, request.params.id)).id, {
      planTier: body.plan_tier, billingEmail: body.billing_email, settings: body.settings, customLimits: body.custom_limits,
    });
    ctx.apiKeys.forget();
    if (!row) throw new NotFoundError('Organization not found');
    return organizationToWire(row);
  });

  app.delete<{ Params: { id: string }; Querystring: { hard_delete?: boolean } }>('/organizations/:id', {
    schema: {
      tags,
      summary: 'Soft delete (plan_tier "deleted": its keys stop working) or, with hard_delete=true, delete everything',
      params: IdParams,
      querystring: Type.Object({ hard_delete: Type.Optional(Type.Boolean()) }),
      response: { 204: Type.Null() },
    },
  }, async (request, reply) => {
    const row = await existing(ctx, request.params.id);
    if (request.query.hard_delete) await organizationDelete(ctx.db, row.id, true);
    else await organizationUpdate(ctx.db, row.id, { planTier: 'deleted' });
    ctx.apiKeys.forget();
    return reply.code(204).send();
  });

  app.post<{ Params: { id: string }; Body: { name: string; queues?: string[] } }>('/organizations/:id/api-keys', {
    schema: { tags, summary: "Create a key for an organization (shown once)", params: IdParams, body: Type.Object({ name: KeyName, queues: Type.Optional(KeyQueues) }), response: { 201: CreatedKeySchema } },
  }, async (request, reply) => {
    const created = await apiKeyCreate(ctx.db, { organizationId: request.params.id, name: request.body.name, queues: request.body.queues ?? [], environment: ctx.config.environment });
    if (!created) throw new NotFoundError('Organization not found');
    return reply.code(201).send({ id: created.id, key: created.key, name: created.name, created_at: created.created_at.toISOString() });
  });

  app.post<{ Params: { id: string } }>('/organizations/:id/reset-usage', {
    schema: { tags, summary: "Reset today's job counter", params: IdParams, response: { 204: Type.Null() } },
  }, async (request, reply) => {
    if (!(await organizationQuotaReset(ctx.db, request.params.id))) throw new NotFoundError('Organization not found');
    return reply.code(204).send();
  });
}

/** docs/compatibility.md §3.17: /admin/*, guarded by X-Admin-Key = ADMIN_API_KEY (401 when missing, wrong or unconfigured). */
export function adminRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.register(async (scope) => {
    requireAdmin(scope, adminCredential(ctx.config, ctx.metricsToken));
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, security: [{ adminKey: [] }] };
    });
    const tags = ['admin'];
    listRoutes(scope, ctx, tags);
    organizationAdminRoutes(scope, ctx, tags);
  }, { prefix: '/admin' });
}
