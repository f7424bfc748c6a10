import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import websocket from '@fastify/websocket';
import type { Logger } from 'pino';
import { PayloadTooLargeError } from '@spool/protocol';
import type { Db, Notifier } from '@spool/engine';
import type { ClaimWaiters } from './claim-waiters.js';
import type { Config } from './config.js';
import type { CompleteBatcher } from './complete-batcher.js';
import type { EnqueueBatcher } from './enqueue-batcher.js';
import { requireAuth } from './http/auth.js';
import { installCanonicalIds } from './http/canonical-ids.js';
import { installCors } from './http/cors.js';
import { requireAuthorization } from './http/route-authorization.js';
import { installErrorHandler } from './http/errors.js';
import { answerBadHandshakes, answerExpectations, clientErrorHandler, frameworkErrors } from './http/framework-errors.js';
import { installJsonBodyParser } from './http/json-body.js';
import { installRequestLog } from './http/request-log.js';
import { installUnknownFieldWarnings } from './http/warnings.js';
import type { TokenService } from './http/jwt.js';
import { createRateLimits } from './http/rate-limit.js';
import { installValidators } from './http/validation.js';
import { adminRoutes } from './routes/admin.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { authPublicRoutes, authRoutes } from './routes/auth.js';
import { billingRoutes } from './routes/billing.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { realtimeRoutes } from './realtime/routes.js';
import { dependencyRoutes } from './routes/dependencies.js';
import { healthRoutes } from './routes/health.js';
import { incomingWebhookRoutes } from './routes/incoming-webhooks.js';
import { dashboardUiRoutes } from './routes/dashboard-ui.js';
import { jobHistoryRoutes } from './routes/job-history.js';
import { jobProgressRoutes } from './routes/job-progress.js';
import { jobRoutes } from './routes/jobs.js';
import { jobBulkRoutes } from './routes/jobs-bulk.js';
import { jobDlqRoutes } from './routes/jobs-dlq.js';
import { dlqReplayRoutes } from './routes/dlq-replays.js';
import { jobWorkerRoutes } from './routes/jobs-worker.js';
import { outgoingWebhookRoutes } from './routes/outgoing-webhooks.js';
import { queueRoutes } from './routes/queues.js';
import { statsRoutes } from './routes/stats.js';
import { workerRoutes } from './routes/workers.js';
import { organizationPublicRoutes, organizationRoutes } from './routes/organizations.js';
import { scheduleRoutes } from './routes/schedules.js';
import { workflowRoutes } from './routes/workflows.js';
import { metricsRoutes } from './routes/metrics.js';
import type { SpoolMetrics } from './metrics/spool-metrics.js';
import type { ApiKeyCache } from './http/api-key-cache.js';
import type { MetricsOperatorToken } from './metrics/operator-token.js';
import type { ServerTracing } from './tracing.js';

/** What route handlers need; built once by the runtime. */

/** Methods whose request bodies Fastify does not read. */
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'TRACE']);

/** Reads a request body to its end without keeping it; refuses one over `max` bytes. */
function discardBody(stream: IncomingMessage, max: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > max) {
        stream.pause();
        reject(new PayloadTooLargeError(`The request body exceeds ${max} bytes (a ${stream.method} request takes none)`, { limit: max }));
      }
    });
    stream.once('end', () => resolve());
    stream.once('error', reject);
    stream.resume();
  });
}
export interface AppContext {
  db: Db;
  notifier: Notifier;
  config: Config;
  logger: Logger;
  tokens: TokenService;
  startedAt: Date;
  version: string;
  /** Long-polling claims of this process (`wait_ms`), woken by the notifier. */
  claimWaiters: ClaimWaiters;
  /** Group commit for single enqueues. */
  enqueueBatcher: EnqueueBatcher;
  completeBatcher: CompleteBatcher;
  metrics: SpoolMetrics;
  /** Recently presented API keys; call `forget()` after changing a key or an organization's plan. */
  apiKeys: ApiKeyCache;
  /** The operator's credential for the whole cluster's /metrics. */
  metricsToken: MetricsOperatorToken;
  /** The server's own spans; null unless an OTLP endpoint is configured (then every call site skips tracing). */
  tracing: ServerTracing | null;
  /** This process's runner of paced DLQ replays: woken when one is created here. */
  dlqReplayer?: { wake(): void };
}

/** Route modules behind API-key/JWT authentication, mounted under /api/v1. */
const AUTHENTICATED_ROUTES: ((app: FastifyInstance, ctx: AppContext) => void)[] = [
  jobRoutes,
  jobHistoryRoutes,
  jobProgressRoutes,
  jobBulkRoutes,
  jobWorkerRoutes,
  jobDlqRoutes,
  dlqReplayRoutes,
  queueRoutes,
  statsRoutes,
  workerRoutes,
  authRoutes,
  organizationRoutes,
  apiKeyRoutes,
  billingRoutes,
  dashboardRoutes,
  scheduleRoutes,
  workflowRoutes,
  dependencyRoutes,
  outgoingWebhookRoutes,
];

/**
 * Route modules that authenticate themselves (or are public), mounted under
 * /api/v1 and rate limited per client IP.
 */
const PUBLIC_API_ROUTES: ((app: FastifyInstance, ctx: AppContext) => void)[] = [
  authPublicRoutes,
  organizationPublicRoutes,
  adminRoutes,
  realtimeRoutes,
  incomingWebhookRoutes,
];

/** One row of the route table (tests build the tenant-isolation matrix from it). */
export interface RouteSummary {
  method: string;
  url: string;
  schema: Record<string, unknown> | undefined;
  /** The authorization operation it performs (authenticated routes; authorization.ts). */
  operation: string | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, in order. */
    routeTable: RouteSummary[];
  }
}

const SECRET_QUERY_PARAMS = /([?&](?:token|access_token|api_key|key)=)[^&]*/gi;

/**
 * Request log lines: method, path and peer, never headers or bodies; query
 * parameters that carry credentials (`?token=` for SSE/WebSocket) are masked.
 */
function requestSerializer(request: { method?: string; url?: string; ip?: string; socket?: { remotePort?: number } }) {
  return {
    method: request.method,
    url: typeof request.url === 'string' ? request.url.replace(SECRET_QUERY_PARAMS, '$1[REDACTED]') : request.url,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

const MAX_BODY_BYTES = 6 * 1024 * 1024;

/** TRUST_PROXY as a hop count: the nearest `hops` peers are proxies (what Fastify does for a number, which its types omit). */
function trustHops(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

/**
 * Node checks the request and headers timeouts on a timer (30 s by default),
 * so a connection could outlive its bound by that much; check a few times
 * per bound instead, at most once a second.
 */
function connectionsCheckingInterval(config: Config): number {
  return Math.max(50, Math.min(1_000, Math.floor(Math.min(config.httpHeadersTimeoutMs, config.httpRequestTimeoutMs) / 4)));
}

/** Builds the HTTP application (not listening yet). */
export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger.child({}, { serializers: { req: requestSerializer } }) as FastifyBaseLogger,
    bodyLimit: MAX_BODY_BYTES,
    // Without it request.ip and request.protocol are the peer's own: a client
    // cannot claim HTTPS or another address with X-Forwarded-* headers.
    trustProxy: typeof ctx.config.trustProxy === 'number' ? trustHops(ctx.config.trustProxy) : ctx.config.trustProxy,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // A client that never finishes its headers or body holds a connection,
    // before authentication; these bound it. The socket itself gets no idle
    // timeout (connectionTimeout): an SSE stream or long poll may be quiet.
    requestTimeout: ctx.config.httpRequestTimeoutMs,
    keepAliveTimeout: ctx.config.httpKeepAliveTimeoutMs,
    http: { headersTimeout: ctx.config.httpHeadersTimeoutMs, connectionsCheckingInterval: connectionsCheckingInterval(ctx.config) },
    clientErrorHandler,
    frameworkErrors,
    // installRequestLog writes one line per request instead of Fastify's two at info.
    logController: new LogController({ disableRequestLogging: true }),
  });
  answerExpectations(app.server);
  app.decorateRequest('auth', null);
  app.decorateRequest('grant', null);
  const routeTable: RouteSummary[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) routeTable.push({ method, url: route.url, schema: route.schema as Record<string, unknown> | undefined, operation: (route.config as { operation?: string } | undefined)?.operation });
  });
  installValidators(app);
  installUnknownFieldWarnings(app);
  installJsonBodyParser(app);
  installCanonicalIds(app);
  installErrorHandler(app);
  // Before the listener stops and in-flight requests are awaited: waiting
  // long polls answer now instead of holding shutdown for up to 30 s.
  app.addHook('preClose', async () => ctx.claimWaiters.close());
  // Node's closeIdleConnections() (forceCloseConnections: 'idle') skips a
  // connection that has not sent a request yet, and HTTP clients open spare
  // ones (undici does under concurrency): each held shutdown until Node's
  // headers timeout, over 60 s. Such a connection carries nothing to drain.
  const connections = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  app.addHook('preClose', async () => {
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
  });
  // Fastify never reads the body of a GET, HEAD or TRACE. Left unread, it is
  // still arriving when the answer ends and the connection closes, and
  // closing a socket with unread input sends a reset that can cut off the
  // end of a large answer on its way (GET /docs/json with a body, found by
  // npm run fuzz). So such a body is read and dropped before the route
  // answers; one larger than any body Spool accepts is a 413.
  app.addHook('onRequest', async (request) => {
    const { headers } = request.raw;
    if (BODYLESS_METHODS.has(request.method) && (headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0')) {
      await discardBody(request.raw, MAX_BODY_BYTES);
    }
  });
  installRequestLog(app, ctx.config.logSlowRequestMs);
  ctx.metrics.installHttpHooks(app);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-api-version', '1');
  });

  // Before the API scopes' hooks: a preflight carries no credentials and is answered before authentication.
  await installCors(app, ctx.config);

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Spool API',
        version: ctx.version,
        description:
          'Spool speaks the Spooled Cloud v1 wire format. Operations tagged `extension` are Spool additions: additive, optional, and never changing what a contract call does.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' }, adminKey: { type: 'apiKey', in: 'header', name: 'X-Admin-Key' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  // Before any route, so that upgrade requests reach only WebSocket routes.
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } });
  answerBadHandshakes(app.websocketServer);

  const limits = createRateLimits(ctx.db, ctx.config.publicRateLimitPerMinute, ctx.logger);
  healthRoutes(app, ctx);
  metricsRoutes(app, ctx);
  await app.register(async (scope) => {
    requireAuth(scope, ctx);
    requireAuthorization(scope, ctx.db);
    scope.addHook('onRequest', limits.byKey);
    for (const routes of AUTHENTICATED_ROUTES) routes(scope, ctx);
  }, { prefix: '/api/v1' });
  await app.register(async (scope) => {
    scope.addHook('onRequest', limits.byIp);
    for (const routes of PUBLIC_API_ROUTES) routes(scope, ctx);
  }, { prefix: '/api/v1' });
  await dashboardUiRoutes(app, ctx);
  return app;
}
