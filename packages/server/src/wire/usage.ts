import { Type } from 'typebox';

const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

/** PlanLimits (CONTRACT §3.14): every key present; null = unlimited. */
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
  max_payload_size_bytes: NullableInt,
  rate_limit_requests_per_second: NullableInt,
  rate_limit_burst: NullableInt,
  job_retention_days: NullableInt,
  history_retention_days: NullableInt,
});

const UsageItemSchema = Type.Object({
  current: Type.Integer(),
  limit: NullableInt,
  percentage: Type.Union([Type.Number(), Type.Null()]),
  is_disabled: Type.Boolean(),
  enforced: Type.Boolean({ description: 'extension: whether Spool refuses a create at this limit (403 LIMIT_EXCEEDED)' }),
});

export const UsageInfoSchema = Type.Object({
  plan: Type.String(),
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
