import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { randomUUID } from 'node:crypto';
import { AuthenticationError, NotFoundError } from '@spool/protocol';
import { tokenRevoke } from '@spool/engine';
import type { AppContext } from '../app.js';
import { authenticateApiKey, authOf, bearer, verifyToken, type AuthContext } from '../http/auth.js';
import { ACCESS_TOKEN_SECONDS, REFRESH_TOKEN_SECONDS, type TokenClaims } from '../http/jwt.js';

// Long enough for a JWT (a sid claim made them pass 512), so that one sent by
// mistake is refused as "not an API key", not as too long.
const LoginBody = Type.Object({ api_key: Type.String({ minLength: 10, maxLength: 8192 }) });
const LoginResponse = Type.Object({
  access_token: Type.String(),
  refresh_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_expires_in: Type.Integer(),
});
const RefreshBody = Type.Object({ refresh_token: Type.String({ minLength: 1, maxLength: 8192 }) });
const RefreshResponse = Type.Object({ access_token: Type.String(), token_type: Type.Literal('Bearer'), expires_in: Type.Integer() });
const LogoutBody = Type.Object({ refresh_token: Type.Optional(Type.Union([Type.String({ maxLength: 8192 }), Type.Null()])) });
const MeResponse = Type.Object({
  organization_id: Type.String(),
  api_key_id: Type.String(),
  queues: Type.Array(Type.String()),
  issued_at: Type.String({ format: 'date-time' }),
  expires_at: Type.String({ format: 'date-time' }),
});
const ClaimsSchema = Type.Object({
  sub: Type.String(),
  organization_id: Type.String(),
  org_id: Type.String(),
  api_key_id: Type.String(),
  queues: Type.Array(Type.String()),
  iat: Type.Integer(),
  nbf: Type.Union([Type.Integer(), Type.Null()]),
  exp: Type.Integer(),
  jti: Type.String(),
  token_type: Type.String(),
});
const ValidateResponse = Type.Object({
  valid: Type.Boolean(),
  message: Type.Union([Type.String(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()], { description: 'the same text as message, for older clients' }),
  claims: Type.Union([ClaimsSchema, Type.Null()]),
});
const EmailQuery = Type.Object({ email: Type.Optional(Type.String({ maxLength: 320 })) });

async function issue(ctx: AppContext, auth: AuthContext, type: 'access' | 'refresh', sessionId: string) {
  return ctx.tokens.sign({ organizationId: auth.organizationId, apiKeyId: auth.apiKeyId, queues: auth.queues, type, sessionId });
}

/**
 * The revocations that end a token's session: its session id (for tokens
 * from before sessions, a refresh token's own jti serves as one), kept until
 * the last access token that session's refresh token could mint has expired.
 * `sessionEnd` is that refresh token's exp, or an upper bound of it.
 */
function sessionRevocation(claims: TokenClaims, sessionEnd: number): { jti: string; exp: number } | null {
  const sid = claims.sid ?? (claims.token_type === 'refresh' ? claims.jti : null);
  return sid ? { jti: sid, exp: sessionEnd + ACCESS_TOKEN_SECONDS } : null;
}

function claimsToWire(claims: TokenClaims) {
  return { ...claims, organization_id: claims.org_id, nbf: claims.nbf ?? null };
}

/** docs/compatibility.md §3.2, the routes that authenticate themselves (or need no credential). */
export function authPublicRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Body: { api_key: string } }>('/auth/login', {
    schema: { tags: ['auth'], summary: 'Exchange an API key for an access and a refresh token', security: [], body: LoginBody, response: { 200: LoginResponse } },
  }, async (request) => {
    const auth = await authenticateApiKey(ctx, request.body.api_key);
    const session = randomUUID();
    const [access, refresh] = await Promise.all([issue(ctx, auth, 'access', session), issue(ctx, auth, 'refresh', session)]);
    return { access_token: access.token, refresh_token: refresh.token, token_type: 'Bearer', expires_in: ACCESS_TOKEN_SECONDS, refresh_expires_in: REFRESH_TOKEN_SECONDS };
  });

  app.post<{ Body: { refresh_token: string } }>('/auth/refresh', {
    schema: { tags: ['auth'], summary: 'Exchange a refresh token for a new access token', security: [], body: RefreshBody, response: { 200: RefreshResponse } },
  }, async (request) => {
    const { claims, context } = await verifyToken(ctx.db, ctx.tokens, request.body.refresh_token, 'refresh');
    // No rotation: the answer carries no refresh token (docs/compatibility.md §3.2) and
    // the SDK keeps the one from login, so the session's id stays the same.
    const access = await issue(ctx, context, 'access', claims.sid ?? claims.jti);
    return { access_token: access.token, token_type: 'Bearer', expires_in: ACCESS_TOKEN_SECONDS };
  });

  app.get('/auth/me', {
    schema: { tags: ['auth'], summary: 'Who an access token belongs to (access JWT only; API keys are refused)', response: { 200: MeResponse } },
  }, async (request) => {
    const credential = bearer(request);
    if (!credential) throw new AuthenticationError('Missing credentials: send Authorization: Bearer <access token>');
    if (!credential.startsWith('eyJ')) throw new AuthenticationError('/auth/me needs an access token from /api/v1/auth/login, not an API key');
    const { claims, context } = await verifyToken(ctx.db, ctx.tokens, credential, 'access');
    return {
      organization_id: context.organizationId,
      api_key_id: context.apiKeyId,
      queues: claims.queues,
      issued_at: new Date(claims.iat * 1000).toISOString(),
      expires_at: new Date(claims.exp * 1000).toISOString(),
    };
  });

  app.post<{ Body: { token?: unknown } }>('/auth/validate', {
    schema: {
      tags: ['auth'],
      summary: 'Check a token (always 200; `valid` tells)',
      security: [],
      body: Type.Object({ token: Type.Optional(Type.Unknown()) }),
      response: { 200: ValidateResponse },
    },
  }, async (request) => {
    const invalid = (message: string) => ({ valid: false, message, error: message, claims: null });
    const token = request.body.token;
    if (typeof token !== 'string' || token === '') return invalid('token is required');
    if (!token.startsWith('eyJ')) return invalid('Not a JWT');
    const verified = await ctx.tokens.verify(token);
    if (!verified.ok) return invalid(verified.reason);
    try {
      const { claims } = await verifyToken(ctx.db, ctx.tokens, token, verified.claims.token_type);
      return { valid: true, message: null, error: null, claims: claimsToWire(claims) };
    } catch (err) {
      if (err instanceof AuthenticationError) return invalid(err.message);
      throw err;
    }
  });

  // Email sign-in needs a mail transport and user accounts, which Spool does
  // not have: both routes answer 404, which the contract allows and clients
  // read as "feature not available".
  app.post('/auth/email/start', {
    schema: { tags: ['auth'], summary: 'Email sign-in (not available: always 404)', security: [], body: Type.Object({ email: Type.Optional(Type.String({ maxLength: 320 })) }) },
  }, async () => {
    throw new NotFoundError('Email sign-in is not available on this server; use an API key');
  });
  app.get('/auth/check-email', {
    schema: { tags: ['auth'], summary: 'Email sign-in lookup (not available: always 404)', security: [], querystring: EmailQuery },
  }, async () => {
    throw new NotFoundError('Email sign-in is not available on this server; use an API key');
  });
}

/**
 * POST /auth/logout: needs the access token it revokes (an API key is
 * accepted as a no-op). It ends the token's session, so the refresh token from
 * the same login and every access token minted from it stop working too, even
 * when the client sends no refresh token (the SDK's usual logout).
 */
export function authRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Body: { refresh_token?: string | null } }>('/auth/logout', {
    config: { operation: 'auth.self' },
    schema: { tags: ['auth'], summary: "Revoke the presented access token and its session: the login's refresh token and its access tokens (and a refresh token, if given)", body: LogoutBody, response: { 204: Type.Null() } },
  }, async (request, reply) => {
    const auth = authOf(request);
    if (auth.via !== 'jwt' || !auth.token) return reply.code(204).send();
    const revoke = [{ jti: auth.token.jti, exp: auth.token.exp }];
    // The session's refresh token was minted before this access token, so it
    // expires within REFRESH_TOKEN_SECONDS from now.
    const session = sessionRevocation(auth.token, Math.floor(Date.now() / 1000) + REFRESH_TOKEN_SECONDS);
    if (session) revoke.push(session);
    const refresh = request.body.refresh_token;
    if (refresh) {
      // A refresh token that does not verify, or is another organization's,
      // is ignored: logout never fails once the caller is authenticated.
      const verified = await ctx.tokens.verify(refresh);
      if (verified.ok && verified.claims.token_type === 'refresh' && verified.claims.org_id === auth.organizationId) {
        revoke.push({ jti: verified.claims.jti, exp: verified.claims.exp });
        const other = sessionRevocation(verified.claims, verified.claims.exp);
        if (other) revoke.push(other);
      }
    }
    await tokenRevoke(ctx.db, auth.organizationId, revoke);
    return reply.code(204).send();
  });
}
