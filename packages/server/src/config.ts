/**
 * Configuration is environment variables with documented defaults
 * (docs/configuration.md). Parsed once at start; invalid values stop the
 * process with a message that names the variable.
 */
export interface Config {
  /** External PostgreSQL; when absent Spool runs its own from `dataDir`. */
  databaseUrl: string | null;
  dataDir: string;
  host: string;
  port: number;
  grpcPort: number;
  adminApiKey: string | null;
  jwtSecret: string | null;
  registrationMode: 'open' | 'closed';
  defaultPlan: string;
  logLevel: string;
  poolMax: number;
  environment: 'development' | 'production';
  /** When set, GET /metrics wants `Authorization: Bearer <token>`; otherwise it is public (CONTRACT §3.1). */
  metricsToken: string | null;
  /** How often the cached queue aggregates behind /metrics refresh while scraped. */
  metricsRefreshMs: number;
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

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    databaseUrl: env.DATABASE_URL || null,
    dataDir: env.SPOOL_DATA_DIR || '.spool',
    host: env.HOST || '0.0.0.0',
    port: int(env, 'PORT', 8080, 0, 65535),
    grpcPort: int(env, 'GRPC_PORT', 50051, 0, 65535),
    adminApiKey: env.ADMIN_API_KEY || null,
    jwtSecret: env.JWT_SECRET || null,
    registrationMode: oneOf(env, 'REGISTRATION_MODE', ['open', 'closed'] as const, 'open'),
    defaultPlan: env.DEFAULT_PLAN || 'free',
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    poolMax: int(env, 'DATABASE_POOL_MAX', 20, 1, 1000),
    environment: oneOf(env, 'SPOOL_ENV', ['development', 'production'] as const, env.NODE_ENV === 'production' ? 'production' : 'development'),
    metricsToken: env.METRICS_TOKEN || null,
    metricsRefreshMs: int(env, 'METRICS_REFRESH_MS', 5_000, 100, 600_000),
  };
}
