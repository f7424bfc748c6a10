/** Organizations, API keys, auth and billing (docs/compatibility.md §3.2, §3.13, §3.14, §3.15). */
import type { CallOptions } from '../http.js';
import type { ApiKeyRole } from '@spool/protocol';
import { Resource, seg } from './resource.js';

export type PlanTier = 'free' | 'starter' | 'pro' | 'enterprise' | 'deleted';

export interface OrganizationSummary {
  id: string;
  name: string;
  slug: string;
  planTier: PlanTier;
  createdAt: string;
}

export interface Organization extends OrganizationSummary {
  billingEmail: string | null;
  settings: Record<string, unknown>;
  customLimits: Record<string, unknown> | null;
  stripeCustomerId?: string | null;
  stripeSubscriptionId?: string | null;
  stripeSubscriptionStatus?: string | null;
  stripeCurrentPeriodEnd?: string | null;
  stripeCancelAtPeriodEnd?: boolean | null;
  updatedAt: string;
}

export interface CreatedApiKey {
  id: string;
  /** The secret key; shown only once. */
  key: string;
  name: string;
  createdAt: string;
  expiresAt?: string | null;
  /** Spool extension (absent on other Spooled servers). */
  queues?: string[];
  /** Spool extension (absent on other Spooled servers). */
  role?: ApiKeyRole;
}


export interface CreateOrganizationResult {
  organization: Organization;
  apiKey: CreatedApiKey;
}

export interface PlanLimits {
  tier: string;
  displayName: string;
  maxJobsPerDay: number | null;
  maxActiveJobs: number | null;
  maxQueues: number | null;
  maxWorkers: number | null;
  maxApiKeys: number | null;
  maxSchedules: number | null;
  maxWorkflows: number | null;
  maxWebhooks: number | null;
  maxPayloadSizeBytes: number;
  rateLimitRequestsPerSecond: number;
  rateLimitBurst: number;
  jobRetentionDays: number;
  historyRetentionDays: number;
}

export interface UsageItem {
  current: number;
  limit: number | null;
  percentage: number | null;
  isDisabled: boolean;
}

export interface UsageInfo {
  plan: string;
  planDisplayName: string;
  limits: PlanLimits;
  usage: Record<'jobsToday' | 'activeJobs' | 'queues' | 'workers' | 'apiKeys' | 'schedules' | 'workflows' | 'webhooks', UsageItem>;
  warnings: { resource: string; message: string; severity: 'warning' | 'critical' }[];
}

export interface OrganizationMember {
  id: string;
  userId: string;
  email: string;
  name: string;
  role: 'owner' | 'member';
  joinedAt: string;
  invitedBy: string | null;
}

export interface WebhookToken {
  token: string | null;
  webhookToken: string | null;
  webhookUrl: string;
}

export class OrganizationsResource extends Resource {
  /** Registers an organization (public route); returns it with its initial API key. */
  create(params: { name: string; slug: string; billingEmail?: string }, options?: CallOptions): Promise<CreateOrganizationResult> {
    return this.call({ method: 'POST', path: '/api/v1/organizations', body: params }, options);
  }

  list(options?: CallOptions): Promise<OrganizationSummary[]> {
    return this.call({ method: 'GET', path: '/api/v1/organizations' }, options);
  }

  get(id: string, options?: CallOptions): Promise<Organization> {
    return this.call({ method: 'GET', path: `/api/v1/organizations/${seg(id)}` }, options);
  }

  update(id: string, params: { name?: string; billingEmail?: string; settings?: Record<string, unknown> }, options?: CallOptions): Promise<Organization> {
    return this.call({ method: 'PUT', path: `/api/v1/organizations/${seg(id)}`, body: params }, options);
  }

  async delete(id: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'DELETE', path: `/api/v1/organizations/${seg(id)}` }, options);
  }

  usage(options?: CallOptions): Promise<UsageInfo> {
    return this.call({ method: 'GET', path: '/api/v1/organizations/usage' }, options);
  }

  members(id: string, options?: CallOptions): Promise<OrganizationMember[]> {
    return this.call({ method: 'GET', path: `/api/v1/organizations/${seg(id)}/members` }, options);
  }

  checkSlug(slug: string, options?: CallOptions): Promise<{ available: boolean; valid: boolean; error?: string; suggestion?: string }> {
    return this.call({ method: 'GET', path: '/api/v1/organizations/check-slug', query: { slug } }, options);
  }

  generateSlug(name: string, options?: CallOptions): Promise<{ slug: string }> {
    return this.call({ method: 'POST', path: '/api/v1/organizations/generate-slug', body: { name }, idempotent: true }, options);
  }

  getWebhookToken(options?: CallOptions): Promise<WebhookToken> {
    return this.call({ method: 'GET', path: '/api/v1/organizations/webhook-token' }, options);
  }

  regenerateWebhookToken(options?: CallOptions): Promise<WebhookToken> {
    return this.call({ method: 'POST', path: '/api/v1/organizations/webhook-token/regenerate' }, options);
  }

  async clearWebhookToken(options?: CallOptions): Promise<void> {
    await this.call({ method: 'POST', path: '/api/v1/organizations/webhook-token/clear', body: { confirm: true }, idempotent: true }, options);
  }
}

export interface ApiKeySummary {
  id: string;
  name: string;
  queues: string[];
  /** Spool extension (absent on other Spooled servers). */
  role?: ApiKeyRole;
  rateLimit: number | null;
  isActive: boolean;
  createdAt: string;
  lastUsed: string | null;
  expiresAt: string | null;
}

export interface CreateApiKeyParams {
  name: string;
  /** Queues the key may use; `[]` or `['*']` = all. */
  queues?: string[];
  rateLimit?: number;
  expiresAt?: Date | string;
  /** Spool extension; default admin. */
  role?: ApiKeyRole;
}

export class ApiKeysResource extends Resource {
  list(options?: CallOptions): Promise<ApiKeySummary[]> {
    return this.call({ method: 'GET', path: '/api/v1/api-keys' }, options);
  }

  create(params: CreateApiKeyParams, options?: CallOptions): Promise<CreatedApiKey> {
    return this.call({ method: 'POST', path: '/api/v1/api-keys', body: params }, options);
  }

  get(id: string, options?: CallOptions): Promise<ApiKeySummary> {
    return this.call({ method: 'GET', path: `/api/v1/api-keys/${seg(id)}` }, options);
  }

  update(id: string, params: { name?: string; queues?: string[]; rateLimit?: number | null; isActive?: boolean; role?: ApiKeyRole }, options?: CallOptions): Promise<ApiKeySummary> {
    return this.call({ method: 'PUT', path: `/api/v1/api-keys/${seg(id)}`, body: params }, options);
  }

  /** Revokes the key; further use answers 401. */
  async revoke(id: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'DELETE', path: `/api/v1/api-keys/${seg(id)}` }, options);
  }
}

export interface LoginResult {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
  refreshExpiresIn: number;
}

export interface TokenClaims {
  organizationId: string;
  apiKeyId: string;
  queues: string[];
  exp: number;
  iat: number;
  tokenType?: string;
  jti?: string;
  [extra: string]: unknown;
}

export class AuthResource extends Resource {
  /** Exchanges an API key for an access token (JWT) and a refresh token. */
  login(apiKey: string, options?: CallOptions): Promise<LoginResult> {
    return this.call({ method: 'POST', path: '/api/v1/auth/login', body: { apiKey } }, options);
  }

  refresh(refreshToken: string, options?: CallOptions): Promise<{ accessToken: string; tokenType: 'Bearer'; expiresIn: number }> {
    return this.call({ method: 'POST', path: '/api/v1/auth/refresh', body: { refreshToken } }, options);
  }

  async logout(refreshToken?: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'POST', path: '/api/v1/auth/logout', body: refreshToken === undefined ? {} : { refreshToken } }, options);
  }

  /** Needs an access token as the client's credential (an API key answers 401). */
  me(options?: CallOptions): Promise<{ organizationId: string; apiKeyId: string; queues: string[]; issuedAt: string; expiresAt: string }> {
    return this.call({ method: 'GET', path: '/api/v1/auth/me' }, options);
  }

  validate(token: string, options?: CallOptions): Promise<{ valid: boolean; message?: string; claims?: TokenClaims }> {
    return this.call({ method: 'POST', path: '/api/v1/auth/validate', body: { token }, idempotent: true }, options);
  }

  startEmail(email: string, options?: CallOptions): Promise<{ success: boolean; message: string }> {
    return this.call({ method: 'POST', path: '/api/v1/auth/email/start', body: { email } }, options);
  }

  checkEmail(email: string, options?: CallOptions): Promise<{ exists: boolean }> {
    return this.call({ method: 'GET', path: '/api/v1/auth/check-email', query: { email } }, options);
  }
}

export interface BillingStatus {
  planTier: PlanTier;
  stripeSubscriptionId?: string | null;
  stripeSubscriptionStatus?: string | null;
  stripeCurrentPeriodEnd?: string | null;
  stripeCancelAtPeriodEnd?: boolean | null;
  hasStripeCustomer: boolean;
}

export class BillingResource extends Resource {
  status(options?: CallOptions): Promise<BillingStatus> {
    return this.call({ method: 'GET', path: '/api/v1/billing/status' }, options);
  }

  portal(returnUrl: string, options?: CallOptions): Promise<{ url: string }> {
    return this.call({ method: 'POST', path: '/api/v1/billing/portal', body: { returnUrl } }, options);
  }
}
