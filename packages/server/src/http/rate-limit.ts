import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { RateLimitError } from '@spool/protocol';
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

type Limiter = ReturnType<FastifyInstance['createRateLimit']>;

async function apply(limiter: Limiter, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const result = await limiter(request);
  if (result.isAllowed) return;
  const resetSeconds = Math.max(1, result.ttlInSeconds);
  reply.header('x-ratelimit-limit', result.max);
  reply.header('x-ratelimit-remaining', result.remaining);
  reply.header('x-ratelimit-reset', Math.ceil(Date.now() / 1000) + resetSeconds);
  if (result.isExceeded) {
    reply.header('retry-after', resetSeconds);
    throw new RateLimitError(resetSeconds, `Rate limit exceeded: ${result.max} requests per ${Math.round(result.timeWindow / 1000)} s; retry in ${resetSeconds} s`);
  }
}

/**
 * Rate limits with @fastify/rate-limit's counters (fixed windows, kept in
 * this process: with N replicas each one enforces the budget on the traffic
 * it sees). A refusal is 429 with Retry-After and X-RateLimit-Limit /
 * -Remaining / -Reset (unix seconds), CONTRACT §1.4. Logins are limited per
 * client IP, never per shared key prefix.
 */
export async function installRateLimits(app: FastifyInstance, publicPerMinute: number): Promise<RateLimits> {
  await app.register(rateLimit, { global: false });
  const cache = { cache: 20_000 } as object;
  const byKeyLimiter = app.createRateLimit({
    ...cache,
    keyGenerator: (request) => `key:${request.auth?.apiKeyId ?? request.ip}`,
    max: (request) => (request.auth ? keyBudget(request.auth)?.max ?? 1 : 1),
    timeWindow: (request) => (request.auth ? keyBudget(request.auth)?.windowMs ?? 1000 : 1000),
  });
  const byIpLimiter = app.createRateLimit({
    ...cache,
    keyGenerator: (request) => `ip:${request.ip}`,
    max: publicPerMinute,
    timeWindow: 60_000,
  });
  return {
    async byKey(request, reply) {
      if (!request.auth || keyBudget(request.auth) === null) return;
      await apply(byKeyLimiter, request, reply);
    },
    async byIp(request, reply) {
      if (publicPerMinute <= 0) return;
      await apply(byIpLimiter, request, reply);
    },
  };
}
