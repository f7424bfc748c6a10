import { isIP } from 'node:net';
import { PLAN_CACHE_MODES, type PlanCacheMode } from '@spool/engine';
import { PLAN_TIERS, type PlanTier } from './plans.js';
import { parseNetwork, type Network } from './webhooks/ssrf.js';

/**
 * Configuration is environment variables with documented defaults
 * (README, Configuration). Parsed once at start; invalid values stop the
 * process with a message that names the variable.
 */
export interface Config {
  /** External PostgreSQL; when absent Spool runs its own from `dataDir`. */
  databaseUrl: string | null;
  /**
   * A direct (unpooled) connection for what needs a session: the LISTEN
   * connection. Null = `databaseUrl`. Set it when `databaseUrl` points at a
   * pooler in transaction mode such as PgBouncer (docs/pgbouncer.md).
   */
  databaseDirectUrl: string | null;
  /**
   * Named prepared statements (parsed once per connection). Off for poolers
   * that hand each transaction a different server connection and do not
   * track prepared statements (PgBouncer before 1.21, or without
   * `max_prepared_statements`).
   */
  preparedStatements: boolean;
  /**
   * `plan_cache_mode` of the pool's connections (DATABASE_PLAN_CACHE_MODE).
   * Generic plans by default. Null sends no SET, so connections keep what
   * PostgreSQL gives them (postgresql.conf, ALTER ROLE/DATABASE … SET): the
   * value `server`, and the default without prepared statements (each
   * unnamed statement is planned anew anyway, and behind a transaction
   * pooler a session SET would land on one server connection).
   */
  planCacheMode: PlanCacheMode | null;
  dataDir: string;
  /** Listen address. Development defaults to 127.0.0.1: only a loopback-bound server may send webhooks to loopback. */
  host: string;
  port: number;
  grpcPort: number;
  /** PEM certificate chain and private key for gRPC TLS; both null = plaintext. */
  grpcTlsCert: string | null;
  grpcTlsKey: string | null;
  adminApiKey: string | null;
  jwtSecret: string | null;
  registrationMode: 'open' | 'closed';
  /** Plan of organizations created by registration and on first start. */
  defaultPlan: PlanTier;
  /** Requests per minute per client IP on unauthenticated routes (login, registration, admin); 0 = no limit. */
  publicRateLimitPerMinute: number;
  logLevel: string;
  /** A request that takes longer (long polls and streams aside) is logged at warn; 0 = never. Every request is logged at debug. */
  logSlowRequestMs: number;
  poolMax: number;
  environment: 'development' | 'production';
  /** Leader lease lifetime: a dead leader is replaced within this long (docs/scheduler.md). */
  leaderTtlMs: number;
  /** A cron tick later than this is "missed" and handled by the schedule's missed_policy. */
  misfireThresholdMs: number;
  /**
   * Fallback for POST /webhooks/{org}/github (X-Hub-Signature-256): used only
   * while exactly one live organization exists and it has no GitHub secret
   * of its own, so that one organization's signed delivery is never
   * accepted at another's URL.
   */
  githubWebhookSecret: string | null;
  /** The same fallback for POST /webhooks/{org}/stripe (Stripe-Signature). */
  stripeWebhookSecret: string | null;
  /**
   * AES-256-GCM key for secrets stored in the database (per-organization
   * webhook signing secrets). Null: a key file in `dataDir` in development;
   * in production such secrets cannot be set.
   */
  secretsKey: Buffer | null;
  /**
   * Which peers may set X-Forwarded-For/-Proto/-Host (Fastify's
   * `trustProxy`): false = none, a hop count, or addresses/CIDRs.
   */
  trustProxy: false | number | string[];
  /** When set, GET /metrics wants `Authorization: Bearer <token>`; otherwise it is public (docs/compatibility.md §3.1). */
  metricsToken: string | null;
  /** How often the cached queue aggregates behind /metrics refresh while scraped. */
  metricsRefreshMs: number;
  /** Most (organization, queue) pairs with /metrics series of their own; the rest share `(other)`. */
  metricsMaxQueues: number;
  /** How long a presented API key may be served from memory (0 = query every request); see http/api-key-cache.ts. */
  authCacheMs: number;
  /** Networks outgoing webhooks may reach although they are private, link-local or loopback (docs/security.md). */
  webhookAllowedNetworks: Network[];
  /** Plain http:// webhook targets in production (development always allows them). */
  webhookAllowHttp: boolean;
  /**
   * Longest a client may take to send a whole request, headers and body,
   * counted from its first byte (Node's requestTimeout). A response being
   * awaited is not counted: long polls and streams are not cut.
   */
  httpRequestTimeoutMs: number;
  /** Longest a client may take to send the request headers (Node's headersTimeout); also bounds a connection that sends nothing. */
  httpHeadersTimeoutMs: number;
  /** How long an idle keep-alive connection is kept open between requests. */
  httpKeepAliveTimeoutMs: number;
  /**
   * Browser origins (scheme://host[:port]) that may call the API from
   * another site, e.g. a dashboard served elsewhere; `*` = any origin
   * (without credentials). Empty = same-origin only.
   */
  corsOrigins: string[];
  /**
   * Where the server sends its own spans (OTLP over HTTP, JSON):
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else
   * OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. Null: no OpenTelemetry SDK
   * is started and tracing costs nothing (docs/observability.md, Tracing).
   */
  otlpTracesUrl: string | null;
  /** `service.name` of the server's spans (OTEL_SERVICE_NAME). */
  otelServiceName: string;
  /**
   * Whether the leader keeps the per-queue activity history (the
   * queue-stats-rollup service, docs/history.md). Off: the service is not
   * started, and the timeseries and 24-hour figures answer from what is stored.
   */
  statsRollup: boolean;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer between ${min} and ${max} (got "${raw}")`);
  }
  return value;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${allowed.join(', ')} (got "${raw}")`);
  return raw as T;
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new Error(`${name} must be true or false (got "${raw}")`);
}

function planCacheMode(env: NodeJS.ProcessEnv, preparedStatements: boolean): PlanCacheMode | null {
  const mode = oneOf(env, 'DATABASE_PLAN_CACHE_MODE', [...PLAN_CACHE_MODES, 'server'] as const, preparedStatements ? 'force_generic_plan' : 'server');
  return mode === 'server' ? null : mode;
}

function pairedFiles(env: NodeJS.ProcessEnv, certName: string, keyName: string): [string | null, string | null] {
  const cert = env[certName] || null;
  const key = env[keyName] || null;
  if ((cert === null) !== (key === null)) throw new Error(`${certName} and ${keyName} must be set together (got only ${cert ? certName : keyName})`);
  return [cert, key];
}

function networks(env: NodeJS.ProcessEnv, name: string): Network[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '').map((entry) => {
    try {
      return parseNetwork(entry);
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message}; separate networks with commas`);
    }
  });
}

function origins(env: NodeJS.ProcessEnv, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const entry of entries) {
    if (entry === '*') continue;
    let url: URL | null = null;
    try {
      url = new URL(entry);
    } catch {
      url = null;
    }
    // A browser sends the Origin header as exactly scheme://host[:port]; anything else would never match.
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || entry.endsWith('/')) {
      throw new Error(`${name}: "${entry}" is not an origin; give scheme://host[:port] without a path (e.g. https://dashboard.example.com), separated by commas, or *`);
    }
  }
  return entries.map((entry) => (entry === '*' ? entry : new URL(entry).origin));
}

function httpUrl(name: string, raw: string): string {
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new Error(`${name} must be an http:// or https:// URL of an OTLP/HTTP receiver, e.g. http://localhost:4318 (got "${raw}")`);
  }
  return url.toString();
}

/**
 * The standard OpenTelemetry variables that decide whether the server
 * exports traces: a traces endpoint, else the base endpoint plus
 * /v1/traces; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off.
 */
function otlpTracesUrl(env: NodeJS.ProcessEnv): string | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const exporters = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporters === 'none') return null;
  if (exporters && exporters.split(',').some((name) => name.trim() !== 'otlp' && name.trim() !== 'none')) {
    throw new Error(`OTEL_TRACES_EXPORTER: Spool exports traces over OTLP only; set it to otlp or none (got "${env.OTEL_TRACES_EXPORTER}")`);
  }
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces);
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return null;
  const url = new URL(httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base));
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.toString();
}

function secretsKey(env: NodeJS.ProcessEnv, name: string): Buffer | null {
  const raw = env[name]?.trim();
  if (!raw) return null;
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : /^[A-Za-z0-9+/_-]{43}=?$/.test(raw) ? Buffer.from(raw, 'base64') : null;
  if (!key || key.length !== 32) throw new Error(`${name} must be 32 bytes as 64 hex digits or base64 (e.g. openssl rand -base64 32)`);
  return key;
}

/** proxy-addr's names for address ranges, accepted as TRUST_PROXY entries. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function proxyEntry(entry: string): boolean {
  if (PROXY_RANGE_NAMES.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

function trustProxy(env: NodeJS.ProcessEnv, name: string): false | number | string[] {
  const raw = env[name]?.trim();
  if (!raw || raw === 'false') return false;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > 10) throw new Error(`${name} as a hop count must be 0-10 (got "${raw}")`);
    return hops === 0 ? false : hops;
  }
  const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  const bad = entries.find((entry) => !proxyEntry(entry));
  if (bad !== undefined) throw new Error(`${name} must be a hop count or a comma list of IP addresses, CIDRs or loopback/linklocal/uniquelocal (bad entry "${bad}")`);
  return entries;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const environment = oneOf(env, 'SPOOL_ENV', ['development', 'production'] as const, env.NODE_ENV === 'production' ? 'production' : 'development');
  const [grpcTlsCert, grpcTlsKey] = pairedFiles(env, 'GRPC_TLS_CERT', 'GRPC_TLS_KEY');
  const preparedStatements = bool(env, 'DATABASE_PREPARED_STATEMENTS', true);
  if (env.DATABASE_DIRECT_URL && !env.DATABASE_URL) throw new Error('DATABASE_DIRECT_URL is set but DATABASE_URL is not: set both (the embedded PostgreSQL needs neither)');
  return {
    databaseUrl: env.DATABASE_URL || null,
    databaseDirectUrl: env.DATABASE_DIRECT_URL || null,
    preparedStatements,
    planCacheMode: planCacheMode(env, preparedStatements),
    dataDir: env.SPOOL_DATA_DIR || '.spool',
    // A development server takes loopback webhook targets, so by default nothing else may reach it.
    host: env.HOST || (environment === 'production' ? '0.0.0.0' : '127.0.0.1'),
    port: int(env, 'PORT', 8080, 0, 65535),
    grpcPort: int(env, 'GRPC_PORT', 50051, 0, 65535),
    grpcTlsCert,
    grpcTlsKey,
    adminApiKey: env.ADMIN_API_KEY || null,
    jwtSecret: env.JWT_SECRET || null,
    registrationMode: oneOf(env, 'REGISTRATION_MODE', ['open', 'closed'] as const, 'open'),
    defaultPlan: oneOf(env, 'DEFAULT_PLAN', PLAN_TIERS, 'free'),
    publicRateLimitPerMinute: int(env, 'RATE_LIMIT_PUBLIC_PER_MINUTE', 600, 0, 1_000_000),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    logSlowRequestMs: int(env, 'LOG_SLOW_REQUEST_MS', 1_000, 0, 3_600_000),
    poolMax: int(env, 'DATABASE_POOL_MAX', 20, 1, 1000),
    environment,
    leaderTtlMs: int(env, 'SPOOL_LEADER_TTL_MS', 15_000, 1_000, 600_000),
    misfireThresholdMs: int(env, 'SPOOL_MISFIRE_THRESHOLD_MS', 60_000, 0, 86_400_000),
    githubWebhookSecret: env.GITHUB_WEBHOOK_SECRET || null,
    stripeWebhookSecret: env.STRIPE_WEBHOOK_SECRET || null,
    secretsKey: secretsKey(env, 'SPOOL_SECRETS_KEY'),
    trustProxy: trustProxy(env, 'TRUST_PROXY'),
    metricsToken: env.METRICS_TOKEN || null,
    metricsRefreshMs: int(env, 'METRICS_REFRESH_MS', 5_000, 100, 600_000),
    metricsMaxQueues: int(env, 'METRICS_MAX_QUEUES', 1_000, 1, 1_000_000),
    authCacheMs: int(env, 'AUTH_CACHE_MS', 0, 0, 60_000),
    webhookAllowedNetworks: networks(env, 'WEBHOOK_ALLOWED_NETWORKS'),
    webhookAllowHttp: bool(env, 'WEBHOOK_ALLOW_HTTP', false),
    corsOrigins: origins(env, 'CORS_ORIGINS'),
    otlpTracesUrl: otlpTracesUrl(env),
    otelServiceName: env.OTEL_SERVICE_NAME?.trim() || 'spool',
    statsRollup: oneOf(env, 'STATS_ROLLUP', ['on', 'off'] as const, 'on') === 'on',
    ...httpTimeouts(env),
  };
}

function httpTimeouts(env: NodeJS.ProcessEnv): Pick<Config, 'httpRequestTimeoutMs' | 'httpHeadersTimeoutMs' | 'httpKeepAliveTimeoutMs'> {
  const httpRequestTimeoutMs = int(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  const httpHeadersTimeoutMs = int(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 3_600_000);
  // Node refuses a headers timeout longer than the request's: say so at start, by name.
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs) {
    throw new Error(`HTTP_HEADERS_TIMEOUT_MS (${httpHeadersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${httpRequestTimeoutMs})`);
  }
  return { httpRequestTimeoutMs, httpHeadersTimeoutMs, httpKeepAliveTimeoutMs: int(env, 'HTTP_KEEPALIVE_TIMEOUT_MS', 72_000, 1_000, 3_600_000) };
}
