import { organizationCreate, type Db } from '@spool/engine';
import type { Config } from './config.js';

const SLUG = 'development';

/**
 * On a database without organizations, creates a development organization
 * and returns its API key, which exists nowhere else: the
 * caller shows it once. Returns null when organizations already exist, when
 * another replica won the race, or in production (where organizations are
 * created through the admin API or registration instead).
 *
 * It is on the `unlimited` plan whatever DEFAULT_PLAN says: it belongs to
 * whoever runs this process, and a first try that enqueues a few hundred jobs
 * should not meet the free plan's 10 active jobs and 5 requests a second.
 */
export const DEVELOPMENT_PLAN = 'unlimited';
export async function ensureDevelopmentOrganization(db: Db, config: Config): Promise<{ organizationId: string; apiKey: string } | null> {
  if (config.environment === 'production') return null;
  const existing = await db.query('SELECT 1 FROM spool.organizations LIMIT 1');
  if (existing.rowCount) return null;
  try {
    const created = await organizationCreate(db, { name: 'Development', slug: SLUG, planTier: DEVELOPMENT_PLAN, environment: config.environment, keyName: 'Development key' });
    return { organizationId: created.organization.id, apiKey: created.apiKey.key };
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return null;
    throw err;
  }
}

/** The first-start message: the key, once, and where to try it (dashboard, curl, CLI). */
export function firstStartMessage(url: string, apiKey: string, plan: string): string {
  return [
    '',
    `Spool created a development organization (plan "${plan}"). Its API key is shown only this once:`,
    '',
    `  ${apiKey}`,
    '',
    `Dashboard: ${url}/ (sign in with the key)`,
    `Try it:    curl -s -H "Authorization: Bearer ${apiKey}" ${url}/api/v1/dashboard`,
    `CLI:       SPOOL_URL=${url} SPOOL_API_KEY=${apiKey} npx spool queues list`,
    '',
  ].join('\n');
}

/** Where a generated operator token is kept when Spool runs its own PostgreSQL (runtime.ts). */
export const OPERATOR_TOKEN_FILE = 'operator-token';

export interface OperatorTokenInfo {
  /** The token itself, generated at this start; null when it was configured or generated earlier. */
  generated: string | null;
  /** The file it is kept in (absolute path), when there is one and it holds the current token. */
  file: string | null;
  /** True when it is also the admin key (development without ADMIN_API_KEY). */
  admitsAdmin: boolean;
}

/** The generated operator token, once, with what to put in Prometheus and what else it opens. */
export function metricsTokenMessage(url: string, token: OperatorTokenInfo & { generated: string }): string {
  return [
    '',
    'Spool generated the operator token for /metrics (the whole cluster; METRICS_TOKEN overrides it). It is shown only this once:',
    '',
    `  ${token.generated}`,
    '',
    ...(token.file ? [`It is kept in ${token.file} (mode 0600) for later starts.`] : []),
    ...(token.admitsAdmin ? ['It is also the admin key (X-Admin-Key for /api/v1/admin/*) while ADMIN_API_KEY is unset.'] : []),
    `Prometheus: authorization: { credentials: ${token.generated} } on the job scraping ${url}/metrics (docs/metrics.md)`,
    '',
  ].join('\n');
}

export interface KeyHintInput {
  url: string;
  environment: Config['environment'];
  registrationMode: Config['registrationMode'];
  /** Which credential the admin API takes, or null when it is off. */
  admin: 'ADMIN_API_KEY' | 'METRICS_TOKEN' | 'generated operator token' | null;
  operatorTokenFile: string | null;
  /** The development organization's id, when it exists. */
  developmentOrganizationId: string | null;
}

/**
 * A later start (the first-start key was shown before, and is shown once):
 * how to get a key now, through the admin endpoint that mints one, with a
 * line that works as printed whenever the credential is at hand.
 */
export function keyHintMessage(input: KeyHintInput): string {
  const { url } = input;
  if (input.admin === null) {
    return [
      '',
      'To get an API key: the admin API is off in production until ADMIN_API_KEY is set; set it, restart, then',
      `  curl -s -X POST -H "X-Admin-Key: $ADMIN_API_KEY" -H "content-type: application/json" -d '{"name":"my key"}' ${url}/api/v1/admin/organizations/<organization id>/api-keys`,
      ...(input.registrationMode === 'open' ? [`Or register a new organization (its first key is in the answer): curl -s -X POST -H "content-type: application/json" -d '{"name":"Acme","slug":"acme"}' ${url}/api/v1/organizations`] : []),
      '',
    ].join('\n');
  }
  const header = input.admin === 'ADMIN_API_KEY' ? '$ADMIN_API_KEY'
    : input.admin === 'METRICS_TOKEN' ? '$METRICS_TOKEN'
      : input.operatorTokenFile ? `$(cat ${input.operatorTokenFile})` : '<the operator token printed at first start>';
  const organization = input.developmentOrganizationId ?? '<organization id>';
  return [
    '',
    `To get an API key${input.developmentOrganizationId ? ' for the development organization' : ''} (X-Admin-Key: ${input.admin === 'generated operator token' ? 'the operator token' : input.admin}):`,
    `  curl -s -X POST -H "X-Admin-Key: ${header}" -H "content-type: application/json" -d '{"name":"my key"}' ${url}/api/v1/admin/organizations/${organization}/api-keys`,
    ...(input.developmentOrganizationId ? [] : [`Organization ids: curl -s -H "X-Admin-Key: ${header}" ${url}/api/v1/admin/organizations`]),
    ...(input.admin === 'generated operator token' && !input.operatorTokenFile ? ['Lost the operator token? Set ADMIN_API_KEY (or METRICS_TOKEN) and restart.'] : []),
    '',
  ].join('\n');
}

/** The development organization's id, if the first start created it and it still exists. */
export async function developmentOrganizationId(db: Db): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>("SELECT id FROM spool.organizations WHERE slug = $1 AND plan_tier <> 'deleted'", [SLUG]);
  return rows[0]?.id ?? null;
}
