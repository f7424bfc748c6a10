import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { organizationCreate, QueueStatsRollup } from '@spool/engine';
import { loadConfig, startSpool, type Config, type RunningSpool, type StartOptions } from '@spool/server';
import { createTestDatabase, type TestDatabase } from './db.js';

/**
 * A real Spool server on a random port over its own test database, plus an
 * organization and API key to call it with. Tests talk to it over real HTTP.
 */
export interface TestServer {
  url: string;
  /** Bound gRPC port on 127.0.0.1. */
  grpcPort: number;
  spool: RunningSpool;
  database: TestDatabase;
  /** Initial key (all queues) of the default test organization. */
  apiKey: string;
  organizationId: string;
  /** fetch against the server; JSON bodies are serialized; the default key is sent unless `auth: null`. */
  request(method: string, path: string, options?: { body?: unknown; auth?: string | null; headers?: Record<string, string>; rawBody?: string }): Promise<{ status: number; headers: Headers; body: any; text: string }>;
  /** Another organization with its own key (for isolation tests). */
  createOrganization(planTier?: string): Promise<{ organizationId: string; apiKey: string; apiKeyId: string }>;
  /** Rolls every committed job_history row into the queues' activity history now, instead of within the rollup's interval. */
  rollUp(): Promise<void>;
  close(): Promise<void>;
}

export async function startTestServer(label: string, overrides: Partial<Config> = {}, options: StartOptions = {}): Promise<TestServer> {
  return startTestServerOn(await createTestDatabase(label), label, overrides, options);
}

/** Like startTestServer, on a database the caller created (dropped by `close()`). */
export async function startTestServerOn(database: TestDatabase, label: string, overrides: Partial<Config> = {}, options: StartOptions = {}): Promise<TestServer> {
  const config: Config = {
    ...loadConfig({}),
    databaseUrl: database.url,
    host: '127.0.0.1',
    port: 0,
    // Test files run in parallel: never the fixed default port.
    grpcPort: 0,
    logLevel: 'silent',
    adminApiKey: 'test-admin-key',
    defaultPlan: 'unlimited',
    ...overrides,
  };
  const logger = pino({ level: process.env.SPOOL_TEST_LOG ?? 'silent' });
  const spool = await startSpool(config, { logger, announce: () => {}, ...options });
  const createOrganization = async (planTier = 'unlimited') => {
    const slug = `${label.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(0, 20) || 'org'}-${randomBytes(4).toString('hex')}`;
    const created = await organizationCreate(spool.db, { name: slug, slug, planTier, environment: 'development' });
    return { organizationId: created.organization.id, apiKey: created.apiKey.key, apiKeyId: created.apiKey.id };
  };
  const first = await createOrganization();
  const server: TestServer = {
    url: spool.url,
    grpcPort: spool.grpcPort,
    spool,
    database,
    apiKey: first.apiKey,
    organizationId: first.organizationId,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
      const auth = options.auth === undefined ? first.apiKey : options.auth;
      if (auth !== null) headers.authorization = `Bearer ${auth}`;
      const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
      const response = await fetch(`${spool.url}${path}`, { method, headers, body });
      const text = await response.text();
      let parsed: unknown = text;
      if ((response.headers.get('content-type') ?? '').includes('application/json') && text) parsed = JSON.parse(text);
      return { status: response.status, headers: response.headers, body: parsed, text };
    },
    createOrganization,
    async rollUp() {
      const rollup = spool.maintenance.find((service): service is QueueStatsRollup => service instanceof QueueStatsRollup);
      if (!rollup) throw new Error('this server runs no queue-stats rollup');
      await rollup.drain();
    },
    async close() {
      await spool.stop();
      await database.drop();
    },
  };
  return server;
}
