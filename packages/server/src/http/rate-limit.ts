import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { RateLimitError } from '@spool/protocol';
import { rateLimitHit, type Db } from '@spool/engine';
import { planLimits } from '../plans.js';
import type { AuthContext } from './auth.js';

export type RateLimitHook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

export interface RateLimits {
  /** Per API key (and the JWTs minted from it); runs after authentication. */
  byKey: RateLimitHook;
  /** Per client IP, for routes without an API key (login, registration, admin). */
  byIp: RateLimitHook;
}

interface Budget {
  max: number;
  windowMs: number;
}

/**
 * A key's budget: its own `rate_limit` (requests per second) when set, else
 * its plan's `rate_limit_burst` requests per burst/rps seconds, which averages
 * to the plan's rps while allowing a burst. Null = not limited (e.g. the
 * `unlimited` plan without a per-key limit).
 */
export function keyBudget(auth: AuthContext): Budget | null {
  if (auth.rateLimit !== null) return { max: auth.rateLimit, windowMs: 1000 };
  const limits = planLimits(auth.planTier, auth.customLimits);
  const rps = limits.rate_limit_requests_per_second;
  if (rps === null || rps <= 0) return null;
  const burst = Math.max(limits.rate_limit_burst ?? rps, 1);
  return { max: burst, windowMs: Math.max(1000, Math.round((burst / rps) * 1000)) };
}

/** A budget this process saw exhausted, refused locally until its window ends. */
interface Exhausted extends Budget {
  until: number;
}

const EXHAUSTED_MAX_ENTRIES = 10_000;
const WARN_INTERVAL_MS = 10_000;

/**
 * Fixed-window rate limits counted in PostgreSQL (spool.rate_limit_counters),
 * so N replicas share one budget instead of granting N of them. One statement
 * per limited request; unlimited keys cost none. Once a window is exhausted
 * this process refuses that budget by itself until the window ends: fixed
 * windows only ever count up, so the answer cannot change, and a client
 * hammering past its limit does not cost a write per refusal. A refusal is 429
 * with Retry-After and X-RateLimit-Limit / -Remaining / -Reset (unix seconds),
 * docs/compatibility.md §1.4; limited answers carry the X-RateLimit-* headers too. Logins
 * are limited per client IP, never per shared key prefix.
 */
export function createRateLimits(db: Db, publicPerMinute: number, logger: Pick<Logger, 'warn'>): RateLimits {
  const exhausted = new Map<string, Exhausted>();
  let lastWarning = 0;

  function remember(bucket: string, entry: Exhausted): void {
    if (exhausted.size >= EXHAUSTED_MAX_ENTRIES) {
      const now = Date.now();
      for (const [key, value] of exhausted) if (value.until <= now) exhausted.delete(key);
      if (exhausted.size >= EXHAUSTED_MAX_ENTRIES) exhausted.clear();
    }
    exhausted.set(bucket, entry);
  }

  async function count(bucket: string, budget: Budget): Promise<{ hits: number; ttlMs: number } | null> {
    const known = exhausted.get(bucket);
    if (known) {
      const ttlMs = known.until - Date.now();
      // A changed budget (a key's rate_limit edited) must be counted afresh.
      if (ttlMs > 0 && known.max === budget.max && known.windowMs === budget.windowMs) return { hits: budget.max + 1, ttlMs };
      exhausted.delete(bucket);
    }
    try {
      const result = await rateLimitHit(db, bucket, budget.windowMs);
      if (result.hits > budget.max) remember(bucket, { ...budget, until: Date.now() + result.ttlMs });
      return result;
    } catch (err) {
      // Fail open: without the counters the request's own queries fail too
      // and answer as they always do; a 500 from here would only hide that.
      if (Date.now() - lastWarning >= WARN_INTERVAL_MS) {
        lastWarning = Date.now();
        logger.warn({ err }, 'rate-limit counters unavailable: requests are not rate limited until the database answers');
      }
      return null;
    }
  }

  async function apply(bucket: string, budget: Budget, reply: FastifyReply): Promise<void> {
    const result = await count(bucket, budget);
    if (!result) return;
    const resetSeconds = Math.max(1, Math.ceil(result.ttlMs / 1000));
    reply.header('x-ratelimit-limit', budget.max);
    reply.header('x-ratelimit-remaining', Math.max(0, budget.max - result.hits));
    reply.header('x-ratelimit-reset', Math.ceil(Date.now() / 1000) + resetSeconds);
    if (result.hits > budget.max) {
      reply.header('retry-after', resetSeconds);
      throw new RateLimitError(resetSeconds, `Rate limit exceeded: ${budget.max} requests per ${Math.round(budget.windowMs / 1000)} s; retry in ${resetSeconds} s`);
    }
  }

  const publicBudget: Budget = { max: publicPerMinute, windowMs: 60_000 };
  return {
    async byKey(request, reply) {
      if (!request.auth) return;
      const budget = keyBudget(request.auth);
      if (budget === null) return;
      await apply(`key:${request.auth.apiKeyId}`, budget, reply);
    },
    async byIp(request, reply) {
      if (publicPerMinute <= 0) return;
      await apply(`ip:${request.ip}`, publicBudget, reply);
    },
  };
}
