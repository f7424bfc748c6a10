import { pino, type Logger } from 'pino';
import {
  createPool,
  JOBS_CHANNEL,
  JobExpirer,
  LeaseReaper,
  migrate,
  Notifier,
  parseJobsNotice,
  ScheduledPromoter,
  type Db,
  type Service,
} from '@spool/engine';
import { buildApp } from './app.js';
import { ClaimWaiters } from './claim-waiters.js';
import { EnqueueBatcher } from './enqueue-batcher.js';
import type { Config } from './config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';
import { TokenService } from './http/jwt.js';
import { SpoolMetrics } from './metrics/spool-metrics.js';
import { VERSION } from './version.js';

export interface RunningSpool {
  /** Base URL of the HTTP listener, e.g. http://127.0.0.1:8080 */
  url: string;
  databaseUrl: string;
  db: Db;
  logger: Logger;
  /** Two-phase stop: stop accepting and finish requests, then services, pools and the embedded database. */
  stop(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
}

/**
 * The composition root: database (embedded or external), migrations,
 * notifier, maintenance services and the HTTP app, started in order and
 * stopped in reverse.
 */
export async function startSpool(config: Config, options: StartOptions = {}): Promise<RunningSpool> {
  const logger = options.logger ?? pino({ level: config.logLevel, redact: ['req.headers.authorization', 'req.headers["x-admin-key"]', 'req.headers["x-api-key"]'] });
  let embedded: EmbeddedPostgres | null = null;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    logger.info({ dataDir: config.dataDir }, 'DATABASE_URL is not set: starting embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, log: (message) => logger.info(message) });
    databaseUrl = embedded.url;
    logger.info({ port: embedded.port }, 'embedded PostgreSQL is ready');
  }

  const db = createPool({ connectionString: databaseUrl, max: config.poolMax }, (err) => logger.warn({ err }, 'idle database connection failed'));
  const services: Service[] = [];
  try {
    const migrated = await migrate(db, (message) => logger.info(message));
    logger.info({ version: migrated.current, applied: migrated.applied }, 'database schema is current');

    const log = (message: string, err?: unknown) => logger.warn({ err }, message);
    const notifier = new Notifier({ connectionString: databaseUrl, log });
    const promoter = new ScheduledPromoter(db, { log });
    notifier.listen(JOBS_CHANNEL, (payload) => {
      const notice = parseJobsNotice(payload);
      if (notice.scheduledAt !== null) promoter.scheduledFor(notice.scheduledAt);
      else if (payload === '') promoter.wake();
    });
    await notifier.start();
    const maintenance = [promoter, new LeaseReaper(db, { log }), new JobExpirer(db, { log })];
    services.push(notifier as unknown as Service, ...maintenance);
    for (const service of services.slice(1)) await service.start();
    const metrics = new SpoolMetrics({ db, services: maintenance, refreshMs: config.metricsRefreshMs, log });
    services.push(metrics);

    const tokens = await TokenService.create(db, config.jwtSecret);
    const claimWaiters = new ClaimWaiters(notifier);
    const enqueueBatcher = new EnqueueBatcher(db);
    const app = await buildApp({ db, notifier, config, logger, tokens, startedAt: new Date(), version: VERSION, claimWaiters, enqueueBatcher, metrics });
    const address = await app.listen({ host: config.host, port: config.port });
    const url = address.replace('0.0.0.0', '127.0.0.1').replace('[::]', '127.0.0.1');
    logger.info({ url }, 'Spool is listening');

    let stopping: Promise<void> | null = null;
    return {
      url,
      databaseUrl,
      db,
      logger,
      stop() {
        stopping ??= (async () => {
          await app.close();
          await enqueueBatcher.drain();
          for (const service of [...services].reverse()) await service.stop();
          await db.end();
          if (embedded) await embedded.stop();
        })();
        return stopping;
      },
    };
  } catch (err) {
    for (const service of [...services].reverse()) await Promise.resolve(service.stop()).catch(() => {});
    await db.end().catch(() => {});
    if (embedded) await embedded.stop();
    throw err;
  }
}
