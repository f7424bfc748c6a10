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

/** The first-start message: the key, once, and a curl line to try it. */
export function firstStartMessage(url: string, apiKey: string, plan: string): string {
  return [
    '',
    `Spool created a development organization (plan "${plan}"). Its API key is shown only this once:`,
    '',
    `  ${apiKey}`,
    '',
    `Try it: curl -s -H "Authorization: Bearer ${apiKey}" ${url}/api/v1/dashboard`,
    '',
  ].join('\n');
}

/** The generated metrics operator token, once, with what to put in Prometheus. */
export function metricsTokenMessage(url: string, token: string): string {
  return [
    '',
    'Spool generated the operator token for /metrics (the whole cluster; METRICS_TOKEN overrides it). It is shown only this once:',
    '',
    `  ${token}`,
    '',
    `Prometheus: authorization: { credentials: ${token} } on the job scraping ${url}/metrics (docs/metrics.md)`,
    '',
  ].join('\n');
}
