import { Type } from 'typebox';
import type { OrganizationRow } from '@spool/engine';
import { wirePlanTier } from '../plans.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);
const Timestamp = Type.String({ format: 'date-time' });

const Unlimited = Type.Boolean({ description: 'extension: on Spool\'s unlimited (self-hosted) plan, whose plan_tier is sent as enterprise' });

/** The contract's Organization (docs/compatibility.md §3.14). `settings` and `custom_limits` are passed through verbatim. */
export const OrganizationSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  plan_tier: Type.String(),
  billing_email: NullableString,
  settings: Type.Unknown(),
  custom_limits: Type.Unknown(),
  stripe_customer_id: NullableString,
  stripe_subscription_id: NullableString,
  stripe_subscription_status: NullableString,
  stripe_current_period_end: Type.Union([Timestamp, Type.Null()]),
  stripe_cancel_at_period_end: Type.Union([Type.Boolean(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
  unlimited: Unlimited,
});

export const OrganizationSummarySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  plan_tier: Type.String(),
  created_at: Timestamp,
  unlimited: Unlimited,
});

/** A key as returned once at creation (`key` is never shown again). */
export const CreatedKeySchema = Type.Object({
  id: Type.String(),
  key: Type.String(),
  name: Type.String(),
  created_at: Timestamp,
});

export const CreatedOrganizationSchema = Type.Object({ organization: OrganizationSchema, api_key: CreatedKeySchema });

export function organizationToWire(row: OrganizationRow): Record<string, unknown> {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    plan_tier: wirePlanTier(row.plan_tier),
    billing_email: row.billing_email,
    settings: row.settings ?? {},
    custom_limits: row.custom_limits ?? null,
    stripe_customer_id: row.stripe_customer_id,
    stripe_subscription_id: row.stripe_subscription_id,
    stripe_subscription_status: row.stripe_subscription_status,
    stripe_current_period_end: row.stripe_current_period_end?.toISOString() ?? null,
    stripe_cancel_at_period_end: row.stripe_cancel_at_period_end,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    unlimited: row.plan_tier === 'unlimited',
  };
}

export function organizationSummaryToWire(row: OrganizationRow): Record<string, unknown> {
  return { id: row.id, name: row.name, slug: row.slug, plan_tier: wirePlanTier(row.plan_tier), created_at: row.created_at.toISOString(), unlimited: row.plan_tier === 'unlimited' };
}
