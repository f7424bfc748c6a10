/**
 * Whether a failure means "the database cannot be reached right now" (it is
 * restarting, a connection broke, it is out of connections, a serialization
 * retry) rather than a bug: the HTTP layer answers 503 with Retry-After and
 * gRPC UNAVAILABLE, so clients retry instead of treating it as a 500.
 *
 * Besides SQLSTATEs, a lost or refused connection reaches us as a socket
 * error (ECONNREFUSED while PostgreSQL restarts) or as one of the pg
 * library's own errors, which carry no code: those are matched by message.
 */
const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '57P01', '57P02', '57P03', '53300']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);
const PG_CLIENT_MESSAGES = [
  /^Connection terminated/, // the server closed the connection (restart, crash) or connect timed out
  /^timeout exceeded when trying to connect$/, // pg-pool: no connection within connectionTimeoutMillis
  /is not queryable$/, // a pooled client whose connection already failed
  /^Client was closed and is not queryable$/,
];

export function isTransientDatabaseError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    // Class 08: connection exception.
    if (/^08[0-9A-Z]{3}$/.test(code) || TRANSIENT_SQLSTATES.has(code) || SOCKET_CODES.has(code)) return true;
  }
  const message = (err as { message?: unknown }).message;
  return typeof message === 'string' && PG_CLIENT_MESSAGES.some((pattern) => pattern.test(message));
}
