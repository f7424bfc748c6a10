import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { NotFoundError } from '@spool/protocol';
import { organizationGet } from '@spool/engine';
import type { AppContext } from '../app.js';
import { authOf } from '../http/auth.js';
import { wirePlanTier } from '../plans.js';

const StatusResponse = Type.Object({
  plan_tier: Type.String(),
  unlimited: Type.Boolean({ description: 'extension: on Spool\'s unlimited plan (plan_tier is then sent as enterprise)' }),
  stripe_subscription_id: Type.Union([Type.String(), Type.Null()]),
  stripe_subscription_status: Type.Union([Type.String(), Type.Null()]),
  stripe_current_period_end: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  stripe_cancel_at_period_end: Type.Union([Type.Boolean(), Type.Null()]),
  has_stripe_customer: Type.Boolean(),
});

/**
 * docs/compatibility.md §3.15. Spool has no payment provider: the status reports the plan
 * (and any Stripe fields an operator stored), and the portal answers 404,
 * which clients read as "not available" (a 5xx would count towards the SDK's
 * circuit breaker).
 */
export function billingRoutes(app: FastifyInstance, ctx: AppContext): void {
  const tags = ['billing'];
  app.get('/billing/status', {
    config: { operation: 'billing.read' },
    schema: { tags, summary: 'Plan and subscription state', response: { 200: StatusResponse } },
  }, async (request) => {
    const row = await organizationGet(ctx.db, authOf(request).organizationId);
    if (!row) throw new NotFoundError('Organization not found');
    return {
      plan_tier: wirePlanTier(row.plan_tier),
      unlimited: row.plan_tier === 'unlimited',
      stripe_subscription_id: row.stripe_subscription_id,
      stripe_subscription_status: row.stripe_subscription_status,
      stripe_current_period_end: row.stripe_current_period_end?.toISOString() ?? null,
      stripe_cancel_at_period_end: row.stripe_cancel_at_period_end,
      has_stripe_customer: row.stripe_customer_id !== null,
    };
  });

  app.post<{ Body: { return_url: string } }>('/billing/portal', {
    config: { operation: 'billing.manage' },
    schema: {
      tags,
      summary: 'Billing portal (not available without a payment provider: 404 after validation)',
      body: Type.Object({ return_url: Type.String({ format: 'uri', maxLength: 2048 }) }),
      response: { 200: Type.Object({ url: Type.String() }) },
    },
  }, async () => {
    throw new NotFoundError('Billing is not configured on this server');
  });
}
