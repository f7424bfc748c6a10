import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Logger } from 'pino';
import type { Db, Notifier } from '@spool/engine';
import type { ClaimWaiters } from './claim-waiters.js';
import type { Config } from './config.js';
import type { EnqueueBatcher } from './enqueue-batcher.js';
import { requireAuth } from './http/auth.js';
import { installErrorHandler } from './http/errors.js';
import { installJsonBodyParser } from './http/json-body.js';
import type { TokenService } from './http/jwt.js';
import { installValidators } from './http/validation.js';
import { healthRoutes } from './routes/health.js';
import { jobRoutes } from './routes/jobs.js';
import { jobBulkRoutes } from './routes/jobs-bulk.js';
import { jobDlqRoutes } from './routes/jobs-dlq.js';
import { jobWorkerRoutes } from './routes/jobs-worker.js';
import { queueRoutes } from './routes/queues.js';
import { workerRoutes } from './routes/workers.js';
import { metricsRoutes } from './routes/metrics.js';
import type { SpoolMetrics } from './metrics/spool-metrics.js';

/** What route handlers need; built once by the runtime. */
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
  metrics: SpoolMetrics;
}

/** Route modules behind API-key/JWT authentication, mounted under /api/v1. */
const AUTHENTICATED_ROUTES: ((app: FastifyInstance, ctx: AppContext) => void)[] = [
  jobRoutes,
  jobBulkRoutes,
  jobWorkerRoutes,
  jobDlqRoutes,
  queueRoutes,
  workerRoutes,
];

/** Route modules that authenticate themselves (or are public), mounted under /api/v1. */
const PUBLIC_API_ROUTES: ((app: FastifyInstance, ctx: AppContext) => void)[] = [];

const MAX_BODY_BYTES = 6 * 1024 * 1024;

/** Builds the HTTP application (not listening yet). */
export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger as FastifyBaseLogger,
    bodyLimit: MAX_BODY_BYTES,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });
  app.decorateRequest('auth', null);
  installValidators(app);
  installJsonBodyParser(app);
  installErrorHandler(app);
  // Before the listener stops and in-flight requests are awaited: waiting
  // long polls answer now instead of holding shutdown for up to 30 s.
  app.addHook('preClose', async () => ctx.claimWaiters.close());
  ctx.metrics.installHttpHooks(app);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-api-version', '1');
  });

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

  healthRoutes(app, ctx);
  metricsRoutes(app, ctx);
  await app.register(async (scope) => {
    requireAuth(scope, ctx.db, ctx.tokens);
    for (const routes of AUTHENTICATED_ROUTES) routes(scope, ctx);
  }, { prefix: '/api/v1' });
  await app.register(async (scope) => {
    for (const routes of PUBLIC_API_ROUTES) routes(scope, ctx);
  }, { prefix: '/api/v1' });
  return app;
}
