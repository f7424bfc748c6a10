import { LimitExceededError } from '@spool/protocol';
import { organizationActiveJobs, organizationQuotaRelease, organizationQuotaReserve } from '@spool/engine';
import type { AppContext } from '../app.js';
import { planLimits, upgradeTo, type PlanLimits } from '../plans.js';
import type { AuthContext } from './auth.js';

/** Reserved daily quota; `settle` gives back what was not used. */
export interface JobQuota {
  reserved: number;
  /** Call once after inserting, with how many jobs were really created (idempotent repeats are not). */
  settle(created: number): Promise<void>;
}

const NOTHING_RESERVED: JobQuota = { reserved: 0, settle: async () => {} };

function describe(limits: PlanLimits, resource: string, current: number, limit: number): string {
  const plan = `the ${limits.display_name} plan`;
  switch (resource) {
    case 'payload_size':
      return `Payload is ${current} bytes; ${plan} allows at most ${limit}`;
    case 'active_jobs':
      return `Active job limit reached: ${current} active jobs of ${limit} allowed on ${plan}`;
    case 'jobs_per_day':
      return `Daily job limit reached: ${current} of ${limit} jobs created today on ${plan}`;
    default:
      return `Plan limit reached for ${resource}: ${current} of ${limit} on ${plan}`;
  }
}

/** The plan-limit refusal of CONTRACT §1.4 (403 LIMIT_EXCEEDED with resource, current, limit, plan, upgrade_to). */
export function limitExceeded(limits: PlanLimits, resource: string, current: number, limit: number): LimitExceededError {
  return new LimitExceededError(describe(limits, resource, current, limit), {
    resource,
    current,
    limit,
    plan: limits.tier,
    upgrade_to: upgradeTo(limits.tier),
  });
}

/**
 * Enforces the caller's plan on a request that creates `count` jobs whose
 * largest payload is `payloadBytes` (CONTRACT §3.14): payload size, active
 * jobs (pending + scheduled + processing) and jobs per UTC day. Call it after
 * validating the body. The daily quota is reserved atomically here; call
 * `settle(created)` after the insert so idempotent repeats do not count.
 * Plans without limits (e.g. `unlimited`) cost no query at all.
 * The active-jobs check is not atomic with the insert: concurrent requests
 * may overshoot it by the jobs they carry.
 */
export async function enforceJobLimits(ctx: AppContext, auth: AuthContext, count: number, payloadBytes: number): Promise<JobQuota> {
  const limits = planLimits(auth.planTier, auth.customLimits);
  const maxPayload = limits.max_payload_size_bytes;
  if (maxPayload !== null && payloadBytes > maxPayload) throw limitExceeded(limits, 'payload_size', payloadBytes, maxPayload);

  const maxActive = limits.max_active_jobs;
  if (maxActive !== null) {
    const active = await organizationActiveJobs(ctx.db, auth.organizationId, maxActive);
    if (active + count > maxActive) throw limitExceeded(limits, 'active_jobs', active, maxActive);
  }

  const perDay = limits.max_jobs_per_day;
  if (perDay === null || count <= 0) return NOTHING_RESERVED;
  const reservation = await organizationQuotaReserve(ctx.db, auth.organizationId, count, perDay);
  if (reservation.counter === null) throw limitExceeded(limits, 'jobs_per_day', reservation.before, perDay);
  let settled = false;
  return {
    reserved: count,
    async settle(created: number) {
      if (settled) return;
      settled = true;
      await organizationQuotaRelease(ctx.db, auth.organizationId, count - Math.max(0, Math.min(created, count)));
    },
  };
}
