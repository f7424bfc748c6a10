import type { PoolClient } from 'pg';
import { LimitExceededError } from '@spool/protocol';
import {
  organizationActiveJobs,
  organizationGet,
  organizationLimitCount,
  organizationLimitLock,
  organizationQuotaRelease,
  organizationQuotaReserve,
  type CountedResource,
  type Queryable,
  type ScheduleJobAdmission,
} from '@spool/engine';
import type { AppContext } from '../app.js';
import { planLimits, upgradeTo, type PlanLimits } from '../plans.js';
import { admissionSlots } from './admission-slots.js';
import type { AuthContext } from './auth.js';

/** Reserved daily quota; `settle` gives back what was not used. */
export interface JobQuota {
  reserved: number;
  /**
   * Where the admitted jobs must be inserted: the transaction that holds the
   * organization's plan lock (plans with job limits), or null for the shared
   * pool and its group commit (plans without). Inserting elsewhere while the
   * lock is held would wait for a second connection.
   */
  db: Queryable | null;
  /** Call once after inserting, with how many jobs were really created (idempotent repeats are not); it commits. */
  settle(created: number): Promise<void>;
}

const NOTHING_RESERVED: JobQuota = { reserved: 0, db: null, settle: async () => {} };

const LIMIT_KEY: Record<CountedResource, keyof PlanLimits> = {
  workers: 'max_workers',
  api_keys: 'max_api_keys',
  schedules: 'max_schedules',
  workflows: 'max_workflows',
  webhooks: 'max_webhooks',
};

const LABEL: Record<CountedResource, string> = {
  workers: 'workers',
  api_keys: 'active API keys',
  schedules: 'active schedules',
  workflows: 'running workflows',
  webhooks: 'enabled webhooks',
};

const FREE_UP: Record<CountedResource, string> = {
  workers: 'deregister a worker (or wait until a stopped one is marked offline)',
  api_keys: 'revoke a key you no longer use',
  schedules: 'pause or delete a schedule',
  workflows: 'wait for a workflow to finish, or cancel one',
  webhooks: 'disable or delete a webhook',
};

function describe(limits: PlanLimits, resource: string, current: number, limit: number): string {
  const plan = `the ${limits.display_name} plan`;
  const upgrade = upgradeTo(limits.tier);
  const next = upgrade ? `, or upgrade to ${upgrade}` : '';
  switch (resource) {
    case 'payload_size':
      return `Payload is ${current} bytes; ${plan} allows at most ${limit}`;
    case 'active_jobs':
      return `Active job limit reached: ${current} active jobs of ${limit} allowed on ${plan}`;
    case 'jobs_per_day':
      return `Daily job limit reached: ${current} of ${limit} jobs created today on ${plan}`;
    default: {
      const counted = resource as CountedResource;
      if (limit === 0) return `${LABEL[counted][0]!.toUpperCase()}${LABEL[counted].slice(1)} are not available on ${plan}${upgrade ? `: upgrade to ${upgrade}` : ''}`;
      return `Plan limit reached: ${current} of ${limit} ${LABEL[counted] ?? resource} on ${plan}; ${FREE_UP[counted] ?? 'remove one'}${next}`;
    }
  }
}

/** The plan-limit refusal of docs/compatibility.md §1.4 (403 LIMIT_EXCEEDED with resource, current, limit, plan, upgrade_to). */
export function limitExceeded(limits: PlanLimits, resource: string, current: number, limit: number): LimitExceededError {
  return new LimitExceededError(describe(limits, resource, current, limit), {
    resource,
    current,
    limit,
    plan: limits.tier,
    upgrade_to: upgradeTo(limits.tier),
  });
}

function hasJobLimits(limits: PlanLimits): boolean {
  return limits.max_active_jobs !== null || limits.max_jobs_per_day !== null;
}

function checkPayload(limits: PlanLimits, payloadBytes: number): void {
  const maxPayload = limits.max_payload_size_bytes;
  if (maxPayload !== null && payloadBytes > maxPayload) throw limitExceeded(limits, 'payload_size', payloadBytes, maxPayload);
}

/**
 * Inside a transaction: takes the organization's jobs lock, refuses `count`
 * more jobs over the active-jobs limit, and reserves them of today's quota.
 * The lock is held until the transaction ends, so the insert in the same
 * transaction is counted by the next check.
 */
async function reserveJobsIn(db: Queryable, limits: PlanLimits, organizationId: string, count: number): Promise<void> {
  await organizationLimitLock(db, organizationId, 'jobs');
  const maxActive = limits.max_active_jobs;
  if (maxActive !== null) {
    const active = await organizationActiveJobs(db, organizationId, maxActive);
    if (active + count > maxActive) throw limitExceeded(limits, 'active_jobs', active, maxActive);
  }
  const perDay = limits.max_jobs_per_day;
  if (perDay === null) return;
  const reservation = await organizationQuotaReserve(db, organizationId, count, perDay);
  if (reservation.counter === null) throw limitExceeded(limits, 'jobs_per_day', reservation.before, perDay);
}

interface HeldTransaction {
  client: Queryable;
  /** Commits (or rolls back) and gives the connection and slot back; safe to call twice. A failed commit throws. */
  end(commit: boolean): Promise<void>;
}

async function holdTransaction(ctx: AppContext, organizationId: string, resource: string): Promise<HeldTransaction> {
  const release = await admissionSlots(ctx.db, ctx.config.poolMax).acquire(`${organizationId}:${resource}`);
  let client: PoolClient;
  try {
    client = await ctx.db.connect();
  } catch (err) {
    release();
    throw err;
  }
  // As engine transaction(): a connection that breaks while checked out must not crash the process.
  let broken: Error | undefined;
  const onError = (err: Error) => { broken = err; };
  client.on('error', onError);
  let ended = false;
  const end = async (commit: boolean) => {
    if (ended) return;
    ended = true;
    try {
      if (commit) {
        await client.query('COMMIT').catch(async (err: unknown) => {
          await client.query('ROLLBACK').catch(() => { broken ??= err instanceof Error ? err : new Error(String(err)); });
          throw err;
        });
      } else {
        await client.query('ROLLBACK').catch((err: unknown) => { broken ??= err instanceof Error ? err : new Error(String(err)); });
      }
    } finally {
      client.off('error', onError);
      client.release(broken);
      release();
    }
  };
  try {
    await client.query('BEGIN');
  } catch (err) {
    await end(false);
    throw err;
  }
  return { client, end };
}

/**
 * Enforces the caller's plan on a request that creates `count` jobs whose
 * largest payload is `payloadBytes` (docs/compatibility.md §3.14): payload size, active
 * jobs (pending + scheduled + processing) and jobs per UTC day. Call it after
 * validating the body, insert on `quota.db` when it is set, then call
 * `settle(created)`: idempotent repeats give their share of the day back,
 * and the transaction holding the organization's jobs lock commits, so two
 * requests at the limit cannot both pass. Plans without job limits (e.g.
 * `unlimited`) cost no query at all.
 */
export async function enforceJobLimits(ctx: AppContext, auth: AuthContext, count: number, payloadBytes: number): Promise<JobQuota> {
  const limits = planLimits(auth.planTier, auth.customLimits);
  checkPayload(limits, payloadBytes);
  if (count <= 0 || !hasJobLimits(limits)) return NOTHING_RESERVED;
  const held = await holdTransaction(ctx, auth.organizationId, 'jobs');
  try {
    await reserveJobsIn(held.client, limits, auth.organizationId, count);
  } catch (err) {
    await held.end(false);
    throw err;
  }
  let settled = false;
  return {
    reserved: count,
    db: held.client,
    async settle(created: number) {
      if (settled) return;
      settled = true;
      const unused = count - Math.max(0, Math.min(created, count));
      let usable = true;
      // After a failed insert the transaction is aborted: this fails too, and everything rolls back.
      if (unused > 0 && limits.max_jobs_per_day !== null) {
        usable = await organizationQuotaRelease(held.client, auth.organizationId, unused).then(() => true, () => false);
      }
      await held.end(usable);
    },
  };
}

/** What a create needs of the plan besides its own resource. */
export interface PlanNeeds {
  /** The identity of a worker being registered (re-registering one is not another worker). */
  worker?: { hostname: string; queueName: string };
  /** Jobs the create makes, with the largest payload (workflows). */
  jobs?: { count: number; payloadBytes: number };
}

/**
 * Runs `create` if the caller's plan has room for one more `resource` (and
 * for `needs.jobs`), else throws 403 LIMIT_EXCEEDED. With a limit, the count
 * and `create(db)` run in one transaction holding the organization's lock
 * for the resource, so concurrent creates at the limit cannot both pass;
 * `create` must use `db` or commit before returning. Without a limit (the
 * unlimited plan) it costs nothing: `create(ctx.db)`.
 */
export async function withinPlanLimit<T>(ctx: AppContext, auth: AuthContext, resource: CountedResource, create: (db: Queryable) => Promise<T>, needs: PlanNeeds = {}): Promise<T> {
  const limits = planLimits(auth.planTier, auth.customLimits);
  const limit = limits[LIMIT_KEY[resource]] as number | null;
  if (needs.jobs) checkPayload(limits, needs.jobs.payloadBytes);
  const jobs = needs.jobs && needs.jobs.count > 0 && hasJobLimits(limits) ? needs.jobs.count : 0;
  if (limit === null && jobs === 0) return create(ctx.db);
  const held = await holdTransaction(ctx, auth.organizationId, resource);
  try {
    if (limit !== null) {
      await organizationLimitLock(held.client, auth.organizationId, resource);
      const current = await organizationLimitCount(held.client, auth.organizationId, resource, Math.max(limit, 1), needs.worker ?? null);
      if (current >= limit) throw limitExceeded(limits, resource, current, limit);
    }
    if (jobs > 0) await reserveJobsIn(held.client, limits, auth.organizationId, jobs);
    const value = await create(held.client);
    await held.end(true);
    return value;
  } catch (err) {
    await held.end(false);
    throw err;
  }
}

/**
 * Plan limits for jobs created by cron (the schedule firer has no request):
 * within the firer's transaction, the organization's jobs lock, then as many
 * of the ticks as active jobs and today's quota leave room for. The rest are
 * recorded as failed runs with the reason.
 */
export function cronJobAdmission(): ScheduleJobAdmission {
  const limitsOf = async (db: Queryable, organizationId: string): Promise<PlanLimits | null> => {
    const organization = await organizationGet(db, organizationId);
    return organization ? planLimits(organization.plan_tier, organization.custom_limits) : null;
  };
  return {
    async admit(db, organizationId, count) {
      const limits = await limitsOf(db, organizationId);
      if (!limits || !hasJobLimits(limits)) return { admitted: count, reason: null };
      await organizationLimitLock(db, organizationId, 'jobs');
      let room = count;
      let reason: string | null = null;
      const maxActive = limits.max_active_jobs;
      if (maxActive !== null) {
        const active = await organizationActiveJobs(db, organizationId, maxActive);
        if (active + room > maxActive) {
          room = Math.max(0, maxActive - active);
          reason = describe(limits, 'active_jobs', active, maxActive);
        }
      }
      const perDay = limits.max_jobs_per_day;
      if (perDay !== null && room > 0) {
        const reservation = await organizationQuotaReserve(db, organizationId, room, perDay);
        if (reservation.counter === null) {
          room = Math.max(0, perDay - reservation.before);
          reason = describe(limits, 'jobs_per_day', reservation.before, perDay);
          if (room > 0) await organizationQuotaReserve(db, organizationId, room, perDay);
        }
      }
      return { admitted: room, reason: reason && `Not fired: ${reason}` };
    },
    async release(db, organizationId, count) {
      const limits = await limitsOf(db, organizationId);
      if (limits?.max_jobs_per_day != null) await organizationQuotaRelease(db, organizationId, count);
    },
  };
}
