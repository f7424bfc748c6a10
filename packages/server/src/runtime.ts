import { pino, type Logger } from 'pino';
import {
  createPool,
  DlqReplayer,
  DlqRetention,
  JOBS_CHANNEL,
  JobExpirer,
  JobStatistics,
  JobRetention,
  LEADER_CHANNEL,
  LeaderElector,
  LeaseReaper,
  QueueStatsRollup,
  migrate,
  planLimitsSync,
  Notifier,
  parseJobsNotice,
  RateLimitPruner,
  RevokedTokenPruner,
  IncomingDeliveryPruner,
  ScheduledPromoter,
  ScheduleFirer,
  ScheduleRunPruner,
  SCHEDULES_CHANNEL,
  WorkerLiveness,
  type Db,
  type LoopService,
  type Service,
} from '@spool/engine';
import { allPlans } from './plans.js';
import { buildApp, type AppContext, type RouteSummary } from './app.js';
import { ClaimWaiters } from './claim-waiters.js';
import { CompleteBatcher } from './complete-batcher.js';
import { ApiKeyCache } from './http/api-key-cache.js';
import { EnqueueBatcher } from './enqueue-batcher.js';
import type { Config } from './config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';
import { GrpcServer } from './grpc/server.js';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEVELOPMENT_PLAN, developmentOrganizationId, ensureDevelopmentOrganization, firstStartMessage, keyHintMessage, metricsTokenMessage, OPERATOR_TOKEN_FILE } from './first-start.js';
import { adminCredential } from './http/admin-auth.js';
import { MetricsOperatorToken } from './metrics/operator-token.js';
import { TokenService } from './http/jwt.js';
import { cronJobAdmission } from './http/plan-limits.js';
import { WebhookDelivery } from './webhooks/delivery-service.js';
import { webhookPolicy } from './webhooks/ssrf.js';
import { SpoolMetrics } from './metrics/spool-metrics.js';
import { VERSION } from './version.js';
import { waitForDatabase } from './wait-for-database.js';
import { errorFields } from './log-fields.js';
import { startTracing, type ServerTracing } from './tracing.js';

/** How long a starting process waits for an unreachable database before it gives up and exits. */
const DATABASE_WAIT_MS = 60_000;

export interface RunningSpool {
  /** Base URL of the HTTP listener, e.g. http://127.0.0.1:8080 */
  url: string;
  /** Bound port of the gRPC listener (same host as HTTP). */
  grpcPort: number;
  databaseUrl: string;
  db: Db;
  logger: Logger;
  /** Every HTTP route (method, url, schema). */
  routes: RouteSummary[];
  /** This process's leader elector (leadership decides which maintenance services run here). */
  leader: LeaderElector;
  /** Every maintenance loop of this process, for their `counters`. */
  maintenance: LoopService[];
  /** This process's cache of presented API keys (its `counters` show hits and invalidations). */
  apiKeys: ApiKeyCache;
  /** Two-phase stop: stop accepting and finish requests and gRPC calls (streams end cleanly), then services, pools and the embedded database. */
  stop(): Promise<void>;
}

/**
 * Refuses to start when NOTIFY sent over the pool never reaches the LISTEN
 * connection: the usual cause is a LISTEN through PgBouncer in transaction
 * mode, and then long polls, new schedules and leader handover would all
 * silently wait for their timers. (A LISTEN connection that is down at start
 * is not this: it reconnects in the background, as before.)
 */
async function checkNotifications(notifier: Notifier, db: Db, config: Config): Promise<void> {
  if (!notifier.connected) return;
  for (let attempt = 0; attempt < 2; attempt++) if (await notifier.roundTrip(db, 5_000)) return;
  const via = config.databaseUrl && config.databaseDirectUrl ? 'DATABASE_DIRECT_URL' : 'DATABASE_URL';
  throw new Error(`a NOTIFY sent over DATABASE_URL did not reach the LISTEN connection (${via}) within 10 s. `
    + 'If DATABASE_URL points at PgBouncer or another pooler in transaction mode, set DATABASE_DIRECT_URL to a direct PostgreSQL connection (docs/pgbouncer.md).');
}

/**
 * With the embedded PostgreSQL the data directory belongs to this cluster
 * alone, so a generated operator token is kept there (mode 0600, beside the
 * database password in pg.json) and a later start can say where it is.
 * Replicas on an external DATABASE_URL share no directory: there it is
 * shown once only. Returns the file when it holds the current token.
 */
function keepOperatorToken(file: string, token: MetricsOperatorToken, logger: Logger): string | null {
  try {
    if (token.generated) {
      writeFileSync(file, `${token.generated}\n`, { mode: 0o600 });
      return file;
    }
    if (existsSync(file) && token.matches(readFileSync(file, 'utf8').trim())) return file;
  } catch (err) {
    logger.warn({ error: errorFields(err), file }, 'the operator token file cannot be written or read');
  }
  return null;
}

export interface StartOptions {
  logger?: Logger;
  /** Where the first-start message (the development key) goes; default stdout, never the log. */
  announce?: (message: string) => void;
}

/** The server-wide provider secrets verify deliveries only for a lone organization: say so when they are set in vain. */
async function warnUnusedWebhookSecrets(db: Db, config: Config, logger: Logger): Promise<void> {
  const set = [config.githubWebhookSecret && 'GITHUB_WEBHOOK_SECRET', config.stripeWebhookSecret && 'STRIPE_WEBHOOK_SECRET'].filter(Boolean);
  if (set.length === 0) return;
  const live = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM (SELECT 1 FROM spool.organizations WHERE plan_tier <> 'deleted' LIMIT 2) AS live");
  if ((live.rows[0]?.n ?? 0) < 2) return;
  logger.warn({ variables: set }, `${set.join(' and ')} ${set.length > 1 ? 'are' : 'is'} ignored while several organizations exist: each organization sets its own signing secret (PUT /api/v1/organizations/webhook-secrets/{github|stripe}, or the dashboard's Settings)`);
}

/** A listener whose port is taken, said as what to do about it (grpc-js buries the cause in its message). */
function portTaken(err: unknown, what: string, host: string, port: number, variable: string): unknown {
  const message = err instanceof Error ? err.message : String(err);
  if ((err as { code?: string }).code !== 'EADDRINUSE' && !message.includes('EADDRINUSE')) return err;
  return Object.assign(new Error(`the ${what} port ${port} on ${host} is taken (another Spool, or another program): stop it, or set ${variable} to a free port (0 picks one)`), { code: 'EADDRINUSE' });
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

  if (embedded) {
    const running = embedded;
    running.onUnexpectedExit((reason) => logger.error({ reason }, `embedded PostgreSQL exited while Spool was running (see ${config.dataDir}/postgres.log). To stop Spool, signal the Spool process only: it stops PostgreSQL itself after the last request`));
  }
  // Set once stop() begins: connections that break from then on are expected, not news.
  let shuttingDown = false;
  const db = createPool({ connectionString: databaseUrl, max: config.poolMax, preparedStatements: config.preparedStatements, planCacheMode: config.planCacheMode ?? undefined }, (err) => {
    logger[shuttingDown ? 'debug' : 'warn']({ error: errorFields(err) }, 'idle database connection failed');
  });
  const services: Service[] = [];
  let tracing: ServerTracing | null = null;
  let metricsToken: MetricsOperatorToken | null = null;
  let tokenFile: string | null = null;
  // Set once the operator token has been printed (or did not need to be).
  let tokenShown = false;
  try {
    tracing = await startTracing(config, logger, VERSION);
    const migrated = await waitForDatabase(() => migrate(db, (message) => logger.info(message)), {
      waitMs: DATABASE_WAIT_MS,
      log: (message, err) => logger.warn({ error: errorFields(err) }, message),
    });
    logger.info({ version: migrated.current, applied: migrated.applied }, 'database schema is current');
    // spool.enqueue() enforces the plans inside applications' transactions: it reads them from here.
    await planLimitsSync(db, allPlans());

    const log = (message: string, err?: unknown) => logger[shuttingDown ? 'debug' : 'warn'](err === undefined ? {} : { error: errorFields(err) }, message);
    // LISTEN belongs to a session: behind a transaction-mode pooler it must
    // use the direct connection, or notifications go to whichever server
    // connection the pooler happened to pick (docs/pgbouncer.md).
    const notifier = new Notifier({ connectionString: (config.databaseUrl && config.databaseDirectUrl) || databaseUrl, log });
    // The promoter runs on every replica: SKIP LOCKED makes overlapping runs
    // safe, and a delayed job then never waits for a leader failover.
    const promoter = new ScheduledPromoter(db, { log });
    // Everything that must run once runs on the elected leader only.
    const firer = new ScheduleFirer(db, { log, misfireThresholdMs: config.misfireThresholdMs, admission: cronJobAdmission() });
    const statistics = new JobStatistics(db, { log });
    const leaderServices: LoopService[] = [
      firer,
      new LeaseReaper(db, { log }),
      new JobExpirer(db, { log }),
      statistics,
      new WorkerLiveness(db, { log }),
      new JobRetention(db, { log }),
      new DlqRetention(db, { log }),
      new ScheduleRunPruner(db, { log }),
      new RevokedTokenPruner(db, { log }),
      new RateLimitPruner(db, { log }),
      new IncomingDeliveryPruner(db, { log }),
      // STATS_ROLLUP=off: for measuring what the history costs (BENCHMARKS.md, Observability overhead).
      ...(config.statsRollup ? [new QueueStatsRollup(db, { log })] : []),
    ];
    const leader: LeaderElector = new LeaderElector(db, {
      ttlMs: config.leaderTtlMs,
      services: leaderServices,
      log,
      onChange: (isLeader, reason) => logger.info({ holder: leader.holder, reason }, isLeader ? 'became leader: running maintenance services' : 'no longer leader'),
    });
    notifier.listen(JOBS_CHANNEL, (payload) => {
      statistics.jobsArrived();
      const notice = parseJobsNotice(payload);
      if (notice.scheduledAt !== null) promoter.scheduledFor(notice.scheduledAt);
      else if (payload === '') promoter.wake();
    });
    notifier.listen(SCHEDULES_CHANNEL, () => firer.wake());
    notifier.listen(LEADER_CHANNEL, () => leader.wake());
    // Before the notifier starts, so that LISTEN spool_auth is in place before any key is cached.
    const apiKeys = new ApiKeyCache(db, notifier, { ttlMs: config.authCacheMs });
    services.push(notifier as unknown as Service); // stopped too if the check below refuses to start
    await notifier.start();
    await checkNotifications(notifier, db, config);
    // WebhookDelivery is safe on every process (SKIP LOCKED claims, a locked dispatch cursor).
    const webhooks = new WebhookDelivery(db, { policy: webhookPolicy(config), log, tracing });
    // Paced DLQ replays run on every replica too: a batch takes its replay's row with SKIP LOCKED.
    const dlqReplayer = new DlqReplayer(db, { log });
    const maintenance: LoopService[] = [promoter, leader, ...leaderServices, webhooks, dlqReplayer];
    services.push(promoter, leader, webhooks, dlqReplayer);
    for (const service of services.slice(1)) await service.start();
    const metrics = new SpoolMetrics({ db, services: maintenance, refreshMs: config.metricsRefreshMs, maxQueues: config.metricsMaxQueues, log });
    services.push(metrics);

    const tokens = await TokenService.create(db, config.jwtSecret);
    metricsToken = await MetricsOperatorToken.create(db, config.metricsToken);
    // Kept at once: a start that fails from here on (a port taken) must not lose the only copy of a generated token.
    tokenFile = embedded && !config.metricsToken ? keepOperatorToken(resolve(config.dataDir, OPERATOR_TOKEN_FILE), metricsToken, logger) : null;
    await warnUnusedWebhookSecrets(db, config, logger);
    const claimWaiters = new ClaimWaiters(notifier);
    const enqueueBatcher = new EnqueueBatcher(db);
    const completeBatcher = new CompleteBatcher(db);
    const context: AppContext = { db, notifier, config, logger, tokens, startedAt: new Date(), version: VERSION, claimWaiters, enqueueBatcher, completeBatcher, metrics, apiKeys, metricsToken, tracing, dlqReplayer };
    const grpc = new GrpcServer({
      context,
      host: config.host,
      port: config.grpcPort,
      tls: config.grpcTlsCert && config.grpcTlsKey ? { certFile: config.grpcTlsCert, keyFile: config.grpcTlsKey } : null,
    });
    services.push(grpc);
    await grpc.start().catch((err: unknown) => {
      throw portTaken(err, 'gRPC', config.host, config.grpcPort, 'GRPC_PORT');
    });
    const grpcPort = grpc.port;
    const app = await buildApp(context);
    const address = await app.listen({ host: config.host, port: config.port }).catch((err: unknown) => {
      throw portTaken(err, 'HTTP', config.host, config.port, 'PORT');
    });
    const url = address.replace('0.0.0.0', '127.0.0.1').replace('[::]', '127.0.0.1');
    logger.info({ url, grpcPort, grpcTls: config.grpcTlsCert !== null }, 'Spool is listening');
    const announce = options.announce ?? ((message: string) => process.stdout.write(`${message}\n`));
    const shownUrl = url.replace('127.0.0.1', 'localhost');
    const admin = adminCredential(config, metricsToken);
    // Only once the server listens: a key created by a start that then fails would never be shown.
    const development = await ensureDevelopmentOrganization(db, config);
    if (development) announce(firstStartMessage(shownUrl, development.apiKey, DEVELOPMENT_PLAN));
    if (metricsToken.generated) announce(metricsTokenMessage(shownUrl, { generated: metricsToken.generated, file: tokenFile, admitsAdmin: admin.source === 'operator token' }));
    tokenShown = true;
    if (!development) {
      announce(keyHintMessage({
        url: shownUrl,
        environment: config.environment,
        registrationMode: config.registrationMode,
        admin: admin.source === 'operator token' ? (config.metricsToken ? 'METRICS_TOKEN' : 'generated operator token') : admin.source,
        operatorTokenFile: tokenFile,
        developmentOrganizationId: await developmentOrganizationId(db),
      }));
    }

    let stopping: Promise<void> | null = null;
    return {
      url,
      grpcPort,
      databaseUrl,
      db,
      logger,
      routes: app.routeTable,
      leader,
      maintenance,
      apiKeys,
      stop() {
        stopping ??= (async () => {
          shuttingDown = true;
          try {
            // HTTP and gRPC drain side by side (stopping the gRPC server again below is a no-op).
            await Promise.all([app.close(), grpc.stop()]);
            await Promise.all([enqueueBatcher.drain(), completeBatcher.drain()]);
            for (const service of [...services].reverse()) await service.stop();
          } finally {
            // After the services: the spans of the last requests and deliveries are sent too.
            await tracing?.shutdown().catch((err: unknown) => logger.warn({ error: errorFields(err) }, 'could not export the last spans'));
            // Every pooled connection is closed before the embedded PostgreSQL
            // stops, even when a service failed to stop: otherwise its fast
            // shutdown breaks them and each one is reported as a failure.
            await db.end();
            if (embedded) await embedded.stop();
          }
          logger.info('Spool stopped');
        })();
        return stopping;
      },
    };
  } catch (err) {
    shuttingDown = true;
    for (const service of [...services].reverse()) await Promise.resolve(service.stop()).catch(() => {});
    if (!tokenShown && !tokenFile) await metricsToken?.forgetUnshown(db).catch(() => {});
    await tracing?.shutdown().catch(() => {});
    await db.end().catch(() => {});
    if (embedded) await embedded.stop();
    throw err;
  }
}
