import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Db, Notifier } from '@spool/engine';
import type { Config } from './config.js';
import { healthRoutes } from './routes/health.js';

/** What route handlers need; built once by the runtime. */
export interface AppContext {
  db: Db;
  notifier: Notifier;
  config: Config;
  logger: Logger;
  startedAt: Date;
}

/** Builds the HTTP application (not listening yet). */
export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger as FastifyBaseLogger,
    bodyLimit: 6 * 1024 * 1024,
    disableRequestLogging: false,
  });
  healthRoutes(app, ctx);
  return app;
}
