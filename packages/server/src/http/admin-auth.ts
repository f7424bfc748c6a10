import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AuthenticationError } from '@spool/protocol';
import { sameSecret } from './same-secret.js';

/**
 * True when the request's X-Admin-Key equals the configured admin key.
 * Constant-time (sameSecret). Never true when unconfigured.
 */
export function adminKeyMatches(request: FastifyRequest, configured: string | null): boolean {
  const presented = request.headers['x-admin-key'];
  if (!configured || typeof presented !== 'string' || presented === '') return false;
  return sameSecret(presented, configured);
}

/** Guards every route of a scope with X-Admin-Key (the Authorization header is ignored there). */
export function requireAdmin(app: FastifyInstance, configured: string | null): void {
  app.addHook('onRequest', async (request) => {
    if (!configured) throw new AuthenticationError('The admin API is disabled: set ADMIN_API_KEY to enable it');
    if (!adminKeyMatches(request, configured)) throw new AuthenticationError('Missing or invalid X-Admin-Key');
  });
}
