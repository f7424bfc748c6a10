import { Type } from 'typebox';
import { planLimitsToWire, wirePlanTier, type UsageInfo } from '../plans.js';

const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

/**
 * PlanLimits (docs/compatibility.md §3.14): every key present; a null `max_*` count = no
 * limit. Payload, rate and retention limits are always integers (the Python
 * SDK requires them); see planLimitsToWire.
 */
export const PlanLimitsSchema = Type.Object({
  tier: Type.String(),
  display_name: Type.String(),
  max_jobs_per_day: NullableInt,
  max_active_jobs: NullableInt,
  max_queues: NullableInt,
  max_workers: NullableInt,
  max_api_keys: NullableInt,
  max_schedules: NullableInt,
  max_workflows: NullableInt,
  max_webhooks: NullableInt,
  max_payload_size_bytes: Type.Integer(),
  rate_limit_requests_per_second: Type.Integer(),
  rate_limit_burst: Type.Integer(),
  job_retention_days: Type.Integer(),
  history_retention_days: Type.Integer(),
  spool_tier: Type.String({ description: 'extension: the tier as Spool stores and accepts it (`unlimited` is sent as tier `enterprise`)' }),
  unlimited: Type.Boolean({ description: 'extension: Spool\'s unlimited (self-hosted) plan' }),
  no_limit: Type.Array(Type.String(), { description: 'extension: integer fields whose value (2147483647) means "no limit"' }),
});

const UsageItemSchema = Type.Object({
  current: Type.Integer(),
  limit: NullableInt,
  percentage: Type.Union([Type.Number(), Type.Null()]),
  is_disabled: Type.Boolean(),
  enforced: Type.Boolean({ description: 'extension: whether Spool refuses a create at this limit (403 LIMIT_EXCEEDED)' }),
});

export const UsageInfoSchema = Type.Object({
  plan: Type.String({ description: 'one of free, starter, pro, enterprise (Spool\'s unlimited plan is enterprise; see limits.unlimited)' }),
  plan_display_name: Type.String(),
  limits: PlanLimitsSchema,
  usage: Type.Object({
    jobs_today: UsageItemSchema,
    active_jobs: UsageItemSchema,
    queues: UsageItemSchema,
    workers: UsageItemSchema,
    api_keys: UsageItemSchema,
    schedules: UsageItemSchema,
    workflows: UsageItemSchema,
    webhooks: UsageItemSchema,
  }),
  warnings: Type.Array(Type.Object({ resource: Type.String(), message: Type.String(), severity: Type.String() })),
});

/** UsageInfo as sent: the tier and limits in the shape both official SDKs accept. */
export function usageInfoToWire(info: UsageInfo): Record<string, unknown> {
  return { ...info, plan: wirePlanTier(info.plan), limits: planLimitsToWire(info.limits) };
}
