/** Health, metrics, dashboard and admin (docs/compatibility.md §3.1, §3.16, §3.17). */
import type { CallOptions } from '../http.js';
import type { CreatedApiKey, Organization, PlanLimits, PlanTier, UsageInfo } from './organizations.js';
import { Resource, seg } from './resource.js';

export interface Health {
  status: 'healthy' | 'degraded';
  version?: string | null;
  database: boolean;
  cache: boolean;
}

export class HealthResource extends Resource {
  get(options?: CallOptions): Promise<Health> {
    return this.call({ method: 'GET', path: '/health' }, options);
  }

  /** Resolves when the process is up. */
  async live(options?: CallOptions): Promise<void> {
    await this.call({ method: 'GET', path: '/health/live', raw: true }, options);
  }

  /** Resolves when the database answers; throws a ServerError (503) otherwise. */
  async ready(options?: CallOptions): Promise<void> {
    await this.call({ method: 'GET', path: '/health/ready', raw: true }, options);
  }

  /** Prometheus text exposition. */
  metrics(options?: CallOptions): Promise<string> {
    return this.call({ method: 'GET', path: '/metrics', raw: true }, options);
  }
}

export interface Dashboard {
  system: { version: string; uptimeSeconds: number; startedAt: string; databaseStatus: string; cacheStatus: string; environment: string };
  jobs: {
    total: number;
    pending: number;
    processing: number;
    completed24h: number;
    failed24h: number;
    deadletter: number;
    avgWaitTimeMs?: number | null;
    avgProcessingTimeMs?: number | null;
  };
  queues: { name: string; pending: number; processing: number; paused: boolean }[];
  workers: { total: number; healthy: number; unhealthy: number };
  recentActivity: { jobsCreated1h: number; jobsCompleted1h: number; jobsFailed1h: number };
}

export class DashboardResource extends Resource {
  /** The org-wide overview; also the cheapest "does this key work" probe. */
  get(options?: CallOptions): Promise<Dashboard> {
    return this.call({ method: 'GET', path: '/api/v1/dashboard' }, options);
  }
}

export interface AdminOrganizationList {
  organizations: {
    id: string;
    name: string;
    slug: string;
    planTier: PlanTier;
    billingEmail: string | null;
    createdAt: string;
    updatedAt: string;
    usage: { jobsToday: number; activeJobs: number; queues: number; workers: number; apiKeys: number };
  }[];
  total: number;
  limit: number;
  offset: number;
}

export interface AdminListParams {
  planTier?: PlanTier;
  search?: string;
  limit?: number;
  offset?: number;
  sortBy?: 'name' | 'slug' | 'plan_tier' | 'updated_at' | 'created_at';
  sortOrder?: 'asc' | 'desc';
}

export interface AdminOrganizationDetail extends Organization {
  usageInfo: UsageInfo;
  apiKeysCount: number;
  totalJobs: number;
}

export interface AdminStats {
  organizations: { total: number; byPlan: { plan: string; count: number }[]; createdToday: number; createdThisWeek: number };
  jobs: { totalActive: number; pending: number; processing: number; completed24h: number; failed24h: number };
  workers: { total: number; healthy: number; degraded: number };
  system: { apiVersion: string; uptimeSeconds: number };
}

/** Operator endpoints; the client needs `adminKey`. */
export class AdminResource extends Resource {
  listOrganizations(params: AdminListParams = {}, options?: CallOptions): Promise<AdminOrganizationList> {
    return this.call({ method: 'GET', path: '/api/v1/admin/organizations', query: { ...params }, admin: true }, options);
  }

  createOrganization(
    params: { name: string; slug: string; billingEmail?: string; planTier?: PlanTier },
    options?: CallOptions,
  ): Promise<{ organization: Organization; apiKey: CreatedApiKey }> {
    return this.call({ method: 'POST', path: '/api/v1/admin/organizations', body: params, admin: true }, options);
  }

  getOrganization(id: string, options?: CallOptions): Promise<AdminOrganizationDetail> {
    return this.call({ method: 'GET', path: `/api/v1/admin/organizations/${seg(id)}`, admin: true }, options);
  }

  updateOrganization(
    id: string,
    params: { planTier?: PlanTier; billingEmail?: string; settings?: Record<string, unknown>; customLimits?: Record<string, unknown> | null },
    options?: CallOptions,
  ): Promise<Organization> {
    return this.call({ method: 'PATCH', path: `/api/v1/admin/organizations/${seg(id)}`, body: params, admin: true, idempotent: true }, options);
  }

  /** Soft delete (plan `deleted`) unless `hardDelete`. */
  async deleteOrganization(id: string, params: { hardDelete?: boolean } = {}, options?: CallOptions): Promise<void> {
    await this.call({ method: 'DELETE', path: `/api/v1/admin/organizations/${seg(id)}`, query: { ...params }, admin: true }, options);
  }

  createApiKey(id: string, params: { name: string; queues?: string[] }, options?: CallOptions): Promise<CreatedApiKey> {
    return this.call({ method: 'POST', path: `/api/v1/admin/organizations/${seg(id)}/api-keys`, body: params, admin: true }, options);
  }

  async resetUsage(id: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'POST', path: `/api/v1/admin/organizations/${seg(id)}/reset-usage`, admin: true, idempotent: true }, options);
  }

  stats(options?: CallOptions): Promise<AdminStats> {
    return this.call({ method: 'GET', path: '/api/v1/admin/stats', admin: true }, options);
  }

  plans(options?: CallOptions): Promise<PlanLimits[]> {
    return this.call({ method: 'GET', path: '/api/v1/admin/plans', admin: true }, options);
  }
}
