import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';

/** Where browsers on another origin may call: the API, /health and /metrics; the dashboard's own pages stay same-origin. */
const CORS_PATHS = /^\/(api|health|metrics)(\/|\?|$)/;

/** What browser clients send (SDKs, the official Spooled dashboard, the admin console). */
const ALLOWED_HEADERS = ['authorization', 'content-type', 'x-organization-id', 'x-api-key', 'x-admin-key', 'x-request-id', 'x-webhook-token', 'traceparent', 'tracestate'];

/** Response headers a page may read: errors carry the request id, 429s their retry advice, Warning what was ignored (docs/jobs-api.md). */
const EXPOSED_HEADERS = ['x-request-id', 'x-api-version', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'warning'];

/**
 * CORS for the origins in CORS_ORIGINS. A listed origin is echoed back with
 * `Access-Control-Allow-Credentials: true` (a page may send cookies or
 * `credentials: 'include'`); `*` answers any origin with `*` and never with
 * credentials, which browsers refuse together. Any other origin gets no
 * CORS headers, and its preflight is a 404 like an unknown route.
 */
export async function installCors(app: FastifyInstance, config: Pick<Config, 'corsOrigins'>): Promise<void> {
  // Same-origin only: no preflight route, so OPTIONS stays the 404 of an unknown route.
  if (config.corsOrigins.length === 0) return;
  const any = config.corsOrigins.includes('*');
  const listed = new Set(config.corsOrigins);
  const base: FastifyCorsOptions = {
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
    // A plain OPTIONS from a listed origin (no Access-Control-Request-Method) gets the headers, not a text/plain 400.
    strictPreflight: false,
  };
  const disabled: FastifyCorsOptions = { ...base, origin: false };
  await app.register(cors, {
    hook: 'onRequest',
    delegator: (request: FastifyRequest, callback: (error: Error | null, options: FastifyCorsOptions) => void) => {
      const origin = request.headers.origin;
      if (!CORS_PATHS.test(request.url) || typeof origin !== 'string') return callback(null, disabled);
      if (listed.has(origin)) return callback(null, { ...base, origin, credentials: true });
      if (any) return callback(null, { ...base, origin: '*', credentials: false });
      return callback(null, disabled);
    },
  });
}
