import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AuthenticationError, type ApiKeyRole } from '@spool/protocol';
import { apiKeyById, apiKeyTouch, isUuid, type ApiKeyIdentity, type Db } from '@spool/engine';
import type { ApiKeyCache } from './api-key-cache.js';
import type { TokenClaims, TokenService, TokenType } from './jwt.js';

/** Who is calling: always derived from the credential, never from the request body. */
export interface AuthContext {
  organizationId: string;
  apiKeyId: string;
  /** [] or containing "*" = every queue. */
  queues: string[];
  /** What the key may do (authorization.ts); read from the key on every request, like `queues`. */
  role: ApiKeyRole;
  rateLimit: number | null;
  planTier: string;
  /** The organization's overrides of its plan's limits. */
  customLimits: Record<string, unknown> | null;
  via: 'api_key' | 'jwt';
  /** Set when authenticated by an access token. */
  token: TokenClaims | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
  }
}

/** Extracts the bearer credential, or null. */
export function bearer(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** Why a key cannot be used, or null when it can. */
function keyProblem(key: ApiKeyIdentity): string | null {
  if (!key.is_active) return 'API key has been revoked';
  if (key.expires_at !== null && key.expires_at.getTime() <= Date.now()) return 'API key has expired';
  if (key.plan_tier === 'deleted') return 'Organization has been deleted';
  return null;
}

function contextOf(key: ApiKeyIdentity, via: 'api_key' | 'jwt', token: TokenClaims | null): AuthContext {
  return {
    organizationId: key.organization_id,
    apiKeyId: key.id,
    queues: key.queues,
    role: key.role,
    rateLimit: key.rate_limit,
    planTier: key.plan_tier,
    customLimits: key.custom_limits,
    via,
    token,
  };
}

const TOUCH_INTERVAL_MS = 60_000;

/** What authentication reads: the database, the JWT service and the API-key cache. */
export interface AuthServices {
  db: Db;
  tokens: TokenService;
  apiKeys: ApiKeyCache;
}

/**
 * Verifies a JWT of the expected type and the key behind it: the signature
 * and `exp`, that neither its `jti` nor its session (`sid`) was revoked by
 * logout, and that the key is still active and belongs to the token's
 * organization. Throws a 401.
 */
export async function verifyToken(db: Db, tokens: TokenService, token: string, expected: TokenType): Promise<{ claims: TokenClaims; context: AuthContext }> {
  const verified = await tokens.verify(token);
  if (!verified.ok) throw new AuthenticationError(verified.reason);
  const claims = verified.claims;
  if (claims.token_type !== expected) {
    throw new AuthenticationError(expected === 'access'
      ? 'Refresh tokens cannot authenticate requests; exchange it at /api/v1/auth/refresh'
      : 'Not a refresh token');
  }
  // A session is revoked as a row keyed by its id (the jti of its refresh
  // token), so one lookup answers for the token and its session.
  const revocable = claims.sid === undefined || claims.sid === claims.jti ? [claims.jti] : [claims.jti, claims.sid];
  const [key, revoked] = await Promise.all([
    apiKeyById(db, claims.api_key_id),
    revocable.every(isUuid) ? db.query('SELECT 1 FROM spool.revoked_tokens WHERE jti = ANY($1::uuid[])', [revocable]) : Promise.resolve({ rowCount: 1 }),
  ]);
  if (revoked.rowCount) throw new AuthenticationError('Token has been revoked');
  if (!key || key.organization_id !== claims.org_id || keyProblem(key) !== null) throw new AuthenticationError('The API key behind this token is no longer active');
  return { claims, context: contextOf(key, 'jwt', claims) };
}

/** Resolves a presented API key (not a JWT) to an AuthContext, or throws a 401. */
export async function authenticateApiKey(services: Pick<AuthServices, 'db' | 'apiKeys'>, credential: string): Promise<AuthContext> {
  if (!credential.startsWith('sk_') && !credential.startsWith('sp_')) throw new AuthenticationError('Invalid API key');
  const key = await services.apiKeys.lookup(credential);
  if (!key) throw new AuthenticationError('Invalid API key');
  const problem = keyProblem(key);
  if (problem) throw new AuthenticationError(problem);
  if (key.last_used === null || Date.now() - key.last_used.getTime() > TOUCH_INTERVAL_MS) {
    // The row may be the cache's: note the touch there too, or every request
    // until the entry expires would touch again.
    key.last_used = new Date();
    apiKeyTouch(services.db, key.id).catch(() => {});
  }
  return contextOf(key, 'api_key', null);
}

/**
 * Resolves an API key or access JWT to an AuthContext, or throws a 401.
 * Refresh tokens are refused as bearer credentials; a token whose key was
 * revoked, or whose jti was revoked by logout, fails at once.
 */
export async function authenticate(services: AuthServices, credential: string | null): Promise<AuthContext> {
  if (!credential) throw new AuthenticationError('Missing credentials: send Authorization: Bearer <api key or access token>');
  if (credential.startsWith('eyJ')) return (await verifyToken(services.db, services.tokens, credential, 'access')).context;
  return authenticateApiKey(services, credential);
}

/** Adds authentication to every route of an encapsulated scope. */
export function requireAuth(app: FastifyInstance, services: AuthServices): void {
  app.addHook('onRequest', async (request) => {
    request.auth = await authenticate(services, bearer(request));
  });
}

/**
 * Who a request's credential is, as job_history records it (`actor`,
 * migration 031): `api_key:<key id>` for an API key; for an access token,
 * which always stands for the key it was exchanged for, that key and its
 * login session: `api_key:<key id>/session:<session id>`.
 */
export function actorOf(auth: AuthContext): string {
  const key = `api_key:${auth.apiKeyId}`;
  if (auth.via !== 'jwt' || !auth.token) return key;
  return `${key}/session:${auth.token.sid ?? auth.token.jti}`;
}

/** The caller's auth context inside an authenticated scope. */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new AuthenticationError();
  return request.auth;
}
