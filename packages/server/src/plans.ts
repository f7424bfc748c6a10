/**
 * Plans and their limits (docs/compatibility.md §3.14). The four contract tiers plus
 * `unlimited`, a Spool addition for self-hosting: every limit null, so no
 * quota is counted or enforced and no per-plan rate limit applies.
 * An organization's `custom_limits` JSON overrides any key of its tier.
 */

import { LIMITS } from '@spool/protocol';

export const PLAN_TIERS = ['free', 'starter', 'pro', 'enterprise', 'unlimited'] as const;
export type PlanTier = (typeof PLAN_TIERS)[number];

/** The wire shape of a plan (PlanLimits); null = unlimited. Keys are always present. */
export interface PlanLimits {
  tier: string;
  display_name: string;
  max_jobs_per_day: number | null;
  max_active_jobs: number | null;
  max_queues: number | null;
  max_workers: number | null;
  max_api_keys: number | null;
  max_schedules: number | null;
  max_workflows: number | null;
  max_webhooks: number | null;
  max_payload_size_bytes: number | null;
  rate_limit_requests_per_second: number | null;
  rate_limit_burst: number | null;
  job_retention_days: number | null;
  history_retention_days: number | null;
}

const KIB = 1024;

const PLANS: Record<PlanTier, PlanLimits> = {
  free: {
    tier: 'free', display_name: 'Free',
    max_jobs_per_day: 1000, max_active_jobs: 10, max_queues: 2, max_workers: 1, max_api_keys: 2,
    max_schedules: 1, max_workflows: 0, max_webhooks: 1, max_payload_size_bytes: 64 * KIB,
    rate_limit_requests_per_second: 5, rate_limit_burst: 10, job_retention_days: 3, history_retention_days: 1,
  },
  starter: {
    tier: 'starter', display_name: 'Starter',
    max_jobs_per_day: 10_000, max_active_jobs: 500, max_queues: 10, max_workers: 5, max_api_keys: 5,
    max_schedules: 10, max_workflows: 5, max_webhooks: 5, max_payload_size_bytes: 256 * KIB,
    rate_limit_requests_per_second: 25, rate_limit_burst: 50, job_retention_days: 14, history_retention_days: 7,
  },
  pro: {
    tier: 'pro', display_name: 'Pro',
    max_jobs_per_day: 100_000, max_active_jobs: 5000, max_queues: 50, max_workers: 25, max_api_keys: 25,
    max_schedules: 50, max_workflows: 25, max_webhooks: 20, max_payload_size_bytes: 1024 * KIB,
    rate_limit_requests_per_second: 100, rate_limit_burst: 200, job_retention_days: 30, history_retention_days: 30,
  },
  enterprise: {
    tier: 'enterprise', display_name: 'Enterprise',
    max_jobs_per_day: null, max_active_jobs: null, max_queues: null, max_workers: null, max_api_keys: null,
    max_schedules: null, max_workflows: null, max_webhooks: null, max_payload_size_bytes: 5 * 1024 * KIB,
    rate_limit_requests_per_second: 500, rate_limit_burst: 1000, job_retention_days: 90, history_retention_days: 90,
  },
  unlimited: {
    tier: 'unlimited', display_name: 'Unlimited (self-hosted)',
    max_jobs_per_day: null, max_active_jobs: null, max_queues: null, max_workers: null, max_api_keys: null,
    max_schedules: null, max_workflows: null, max_webhooks: null, max_payload_size_bytes: null,
    rate_limit_requests_per_second: null, rate_limit_burst: null, job_retention_days: null, history_retention_days: null,
  },
};

/**
 * Stands for "no limit" where both official SDKs' models want an integer
 * (the largest int32, which every client's integer type holds).
 */
export const NO_LIMIT_INT = 2_147_483_647;

/** PlanLimits keys the Python SDK requires as integers (the `max_*` counts may be null). */
const INTEGER_REQUIRED = ['rate_limit_requests_per_second', 'rate_limit_burst', 'job_retention_days', 'history_retention_days'] as const;

/** A plan as sent to clients: the contract's PlanLimits plus Spool's extensions. */
export interface WirePlanLimits extends PlanLimits {
  /** The tier as Spool stores and accepts it (`unlimited` included), for admin clients that change plans. */
  spool_tier: string;
  /** True for Spool's `unlimited` plan, sent as tier `enterprise`. */
  unlimited: boolean;
  /** Integer fields whose value (NO_LIMIT_INT) means "no limit". */
  no_limit: string[];
}

/**
 * The plan tier clients are told: one of the contract's four. Spool's own
 * `unlimited` is `enterprise` on the wire (the SDKs' models accept only the
 * contract's tiers); `deleted` (admin soft delete, in the contract) stays.
 */
export function wirePlanTier(tier: string): string {
  return tier === 'unlimited' ? 'enterprise' : tier;
}

/**
 * PlanLimits in a shape both official SDKs accept: the `max_*` counts keep
 * null for "no limit"; the payload limit is the real cap (the request
 * body's, when the plan has none); rate and retention limits that are null
 * become NO_LIMIT_INT, listed in `no_limit`.
 */
export function planLimitsToWire(limits: PlanLimits): WirePlanLimits {
  const out: WirePlanLimits = { ...limits, tier: wirePlanTier(limits.tier), spool_tier: limits.tier, unlimited: limits.tier === 'unlimited', no_limit: [] };
  // Without a plan limit a payload is still bounded by the request's own cap (413 above it).
  out.max_payload_size_bytes = limits.max_payload_size_bytes ?? LIMITS.payloadBytesMax;
  for (const key of INTEGER_REQUIRED) {
    if (limits[key] !== null) continue;
    out[key] = NO_LIMIT_INT;
    out.no_limit.push(key);
  }
  return out;
}

/** Tier to suggest in a LIMIT_EXCEEDED answer. */
const UPGRADE_TO: Record<PlanTier, PlanTier | null> = { free: 'starter', starter: 'pro', pro: 'enterprise', enterprise: null, unlimited: null };

const OVERRIDABLE = new Set<keyof PlanLimits>(Object.keys(PLANS.free).filter((key) => key !== 'tier' && key !== 'display_name') as (keyof PlanLimits)[]);

export function isPlanTier(value: unknown): value is PlanTier {
  return typeof value === 'string' && (PLAN_TIERS as readonly string[]).includes(value);
}

/** Every plan, in upgrade order (GET /admin/plans; serialize with planLimitsToWire). */
export function allPlans(): PlanLimits[] {
  return PLAN_TIERS.map((tier) => ({ ...PLANS[tier] }));
}

/**
 * The effective limits of an organization: its tier's limits with
 * `custom_limits` applied. Only known keys holding a non-negative integer or
 * null are taken from the overrides; anything else in the JSON is ignored.
 * An unknown tier (e.g. `deleted`) gets the free plan's limits.
 */
export function planLimits(tier: string, customLimits?: Record<string, unknown> | null): PlanLimits {
  const base = isPlanTier(tier) ? PLANS[tier] : { ...PLANS.free, tier, display_name: tier };
  const limits: PlanLimits = { ...base };
  if (customLimits && typeof customLimits === 'object' && !Array.isArray(customLimits)) {
    for (const [key, value] of Object.entries(customLimits)) {
      if (!OVERRIDABLE.has(key as keyof PlanLimits)) continue;
      if (value === null || (typeof value === 'number' && Number.isInteger(value) && value >= 0)) {
        (limits as unknown as Record<string, number | null>)[key] = value;
      }
    }
  }
  return limits;
}

export function upgradeTo(tier: string): string | null {
  return isPlanTier(tier) ? UPGRADE_TO[tier] : 'starter';
}

/**
 * One row of UsageInfo.usage. `enforced` (extension) says whether Spool
 * refuses a create at the limit; see ENFORCED.
 */
export interface UsageItem {
  current: number;
  limit: number | null;
  percentage: number | null;
  is_disabled: boolean;
  enforced: boolean;
}

export interface UsageCounts {
  jobs_today: number;
  active_jobs: number;
  queues: number;
  workers: number;
  api_keys: number;
  schedules: number;
  workflows: number;
  webhooks: number;
}

export interface UsageWarning {
  resource: string;
  message: string;
  severity: 'warning' | 'critical';
}

export interface UsageInfo {
  plan: string;
  plan_display_name: string;
  limits: PlanLimits;
  usage: Record<keyof UsageCounts, UsageItem>;
  warnings: UsageWarning[];
}

const USAGE_LIMIT_KEY: Record<keyof UsageCounts, keyof PlanLimits> = {
  jobs_today: 'max_jobs_per_day',
  active_jobs: 'max_active_jobs',
  queues: 'max_queues',
  workers: 'max_workers',
  api_keys: 'max_api_keys',
  schedules: 'max_schedules',
  workflows: 'max_workflows',
  webhooks: 'max_webhooks',
};

const RESOURCE_LABEL: Record<keyof UsageCounts, string> = {
  jobs_today: 'jobs today',
  active_jobs: 'active jobs',
  queues: 'queues',
  workers: 'workers',
  api_keys: 'API keys',
  schedules: 'schedules',
  workflows: 'workflows',
  webhooks: 'webhooks',
};

/**
 * Which limits Spool enforces (docs/tenancy.md, Plans and limits). Queues are
 * not: a queue is a name on a job, and refusing a new name would cost a
 * lookup on every enqueue.
 */
export const ENFORCED: Record<keyof UsageCounts, boolean> = {
  jobs_today: true,
  active_jobs: true,
  queues: false,
  workers: true,
  api_keys: true,
  schedules: true,
  workflows: true,
  webhooks: true,
};

/**
 * `current` is always the true count, which can exceed a limit lowered after
 * the fact; the percentage of an enforced limit stops at 100, as nothing more
 * can be created.
 */
function usageItem(current: number, limit: number | null, enforced: boolean): UsageItem {
  if (limit === null) return { current, limit: null, percentage: null, is_disabled: false, enforced };
  if (limit === 0) return { current, limit: 0, percentage: null, is_disabled: true, enforced };
  const percentage = Math.round((current / limit) * 10_000) / 100;
  return { current, limit, percentage: enforced ? Math.min(100, percentage) : percentage, is_disabled: false, enforced };
}

/**
 * UsageInfo from counts and limits. Warnings start at 50 % of a limit on the
 * free plan and 80 % on the others; at 100 % they are critical. A limit that
 * is not enforced gets no warning: reaching it refuses nothing.
 */
export function usageInfo(limits: PlanLimits, counts: UsageCounts): UsageInfo {
  const threshold = limits.tier === 'free' ? 50 : 80;
  const usage = {} as Record<keyof UsageCounts, UsageItem>;
  const warnings: UsageWarning[] = [];
  for (const resource of Object.keys(USAGE_LIMIT_KEY) as (keyof UsageCounts)[]) {
    const item = usageItem(counts[resource], limits[USAGE_LIMIT_KEY[resource]] as number | null, ENFORCED[resource]);
    usage[resource] = item;
    if (item.percentage === null || !item.enforced) continue;
    const label = RESOURCE_LABEL[resource];
    if (item.percentage >= 100) {
      warnings.push({ resource, severity: 'critical', message: `You have reached your plan's limit of ${item.limit} ${label}` });
    } else if (item.percentage >= threshold) {
      warnings.push({ resource, severity: 'warning', message: `You are using ${item.current} of ${item.limit} ${label} (${Math.floor(item.percentage)}%)` });
    }
  }
  return { plan: limits.tier, plan_display_name: limits.display_name, limits, usage, warnings };
}
