import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AuthenticationError } from '@spool/protocol';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * True when the request's X-Admin-Key equals the configured admin key.
 * Compares SHA-256 digests with timingSafeEqual, so neither the content nor
 * the length of the key leaks through timing. Never true when unconfigured.
 */
export function adminKeyMatches(request: FastifyRequest, configured: string | null): boolean {
  const presented = request.headers['x-admin-key'];
  if (!configured || typeof presented !== 'string' || presented === '') return false;
  return timingSafeEqual(digest(presented), digest(configured));
}

/** Guards every route of a scope with X-Admin-Key (the Authorization header is ignored there). */
export function requireAdmin(app: FastifyInstance, configured: string | null): void {
  app.addHook('onRequest', async (request) => {
    if (!configured) throw new AuthenticationError('The admin API is disabled: set ADMIN_API_KEY to enable it');
    if (!adminKeyMatches(request, configured)) throw new AuthenticationError('Missing or invalid X-Admin-Key');
  });
}
