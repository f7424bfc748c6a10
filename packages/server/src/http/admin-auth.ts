import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AuthenticationError } from '@spool/protocol';
import type { Config } from '../config.js';
import type { MetricsOperatorToken } from '../metrics/operator-token.js';
import { sameSecret } from './same-secret.js';

/** Who may present X-Admin-Key, decided once from the configuration. */
export interface AdminCredential {
  /** What X-Admin-Key is compared with, for messages: never the secret itself. */
  readonly source: 'ADMIN_API_KEY' | 'operator token' | null;
  matches(presented: string): boolean;
}

/**
 * ADMIN_API_KEY when set. Unset, a development server accepts the operator
 * token (METRICS_TOKEN, or the one generated at first start, which also
 * protects /metrics), so that the first hour needs no restart to mint a key.
 * Production keeps the two apart: the metrics token lives in Prometheus'
 * configuration, and minting keys for every organization is a power it
 * should not carry there; the admin API stays off until ADMIN_API_KEY is set.
 */
export function adminCredential(config: Pick<Config, 'adminApiKey' | 'environment'>, operatorToken: MetricsOperatorToken): AdminCredential {
  const configured = config.adminApiKey;
  if (configured) return { source: 'ADMIN_API_KEY', matches: (presented) => sameSecret(presented, configured) };
  if (config.environment !== 'production') return { source: 'operator token', matches: (presented) => operatorToken.matches(presented) };
  return { source: null, matches: () => false };
}

/**
 * True when the request's X-Admin-Key is the admin credential.
 * Constant-time (sameSecret). Never true when the admin API is off.
 */
export function adminKeyMatches(request: FastifyRequest, credential: AdminCredential): boolean {
  const presented = request.headers['x-admin-key'];
  if (credential.source === null || typeof presented !== 'string' || presented === '') return false;
  return credential.matches(presented);
}

/** Guards every route of a scope with X-Admin-Key (the Authorization header is ignored there). */
export function requireAdmin(app: FastifyInstance, credential: AdminCredential): void {
  app.addHook('onRequest', async (request) => {
    if (credential.source === null) throw new AuthenticationError('The admin API is disabled in production until ADMIN_API_KEY is set: set it and restart');
    if (!adminKeyMatches(request, credential)) {
      throw new AuthenticationError(credential.source === 'ADMIN_API_KEY'
        ? 'Missing or invalid X-Admin-Key: send the ADMIN_API_KEY'
        : 'Missing or invalid X-Admin-Key: send the operator token (printed at first start, kept in SPOOL_DATA_DIR/operator-token with the embedded PostgreSQL), or set ADMIN_API_KEY');
    }
  });
}
