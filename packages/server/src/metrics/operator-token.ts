import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '@spool/engine';
import { sameSecret } from '../http/same-secret.js';

const SETTING = 'metrics_token_sha256';

const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * The operator's credential for the whole cluster's /metrics: METRICS_TOKEN
 * when set; otherwise one generated on first start, shown once (like the
 * development key), and kept in the database only as its SHA-256 so that
 * every replica accepts it and a database dump does not reveal it.
 */
export class MetricsOperatorToken {
  private constructor(private readonly sha256: string, readonly generated: string | null) {}

  static async create(db: Db, configured: string | null): Promise<MetricsOperatorToken> {
    if (configured) return new MetricsOperatorToken(digest(configured), null);
    const candidate = `smt_${randomBytes(24).toString('base64url')}`;
    const inserted = await db.query<{ value: string }>(
      'INSERT INTO spool.server_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING value',
      [SETTING, digest(candidate)],
    );
    if (inserted.rows[0]) return new MetricsOperatorToken(inserted.rows[0].value, candidate);
    const existing = await db.query<{ value: string }>('SELECT value FROM spool.server_settings WHERE name = $1', [SETTING]);
    return new MetricsOperatorToken(existing.rows[0]!.value, null);
  }

  /**
   * Undoes a generation whose token was never shown (the start failed before
   * it could print it, and no file keeps it), so the next start generates and
   * shows one instead of asking for a token nobody saw. Only this token's row.
   */
  async forgetUnshown(db: Db): Promise<void> {
    if (!this.generated) return;
    await db.query('DELETE FROM spool.server_settings WHERE name = $1 AND value = $2', [SETTING, this.sha256]);
  }

  matches(presented: string): boolean {
    return sameSecret(digest(presented), this.sha256);
  }
}

const ORG_LABEL = /organization_id="([^"]*)"/;
const QUEUE_LABEL = /queue="([^"]*)"/;
/** Families without an organization label that tell a tenant nothing about other tenants. */
const SHARED_FAMILIES = /^(http_|process_|nodejs_)/;

/**
 * The exposition text as one organization may see it: its own series (of the
 * queues `allows` accepts) and the process/HTTP families, never another
 * organization's ids or queue names nor cluster-wide Spool series. A family's
 * HELP and TYPE lines are kept only with at least one of its samples.
 */
export function organizationSeries(text: string, organizationId: string, allows: (queue: string) => boolean): string {
  const out: string[] = [];
  let headers: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      if (line.startsWith('# HELP ')) headers = [];
      headers.push(line);
      continue;
    }
    const org = ORG_LABEL.exec(line);
    let keep: boolean;
    if (org) {
      const queue = QUEUE_LABEL.exec(line);
      keep = org[1] === organizationId && (!queue || allows(queue[1]!));
    } else keep = SHARED_FAMILIES.test(line);
    if (!keep) continue;
    out.push(...headers, line);
    headers = [];
  }
  return `${out.join('\n')}\n`;
}
