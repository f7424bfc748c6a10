import { randomBytes, randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Db } from '@spool/engine';

export type TokenType = 'access' | 'refresh';

export interface TokenClaims {
  sub: string;
  org_id: string;
  api_key_id: string;
  queues: string[];
  iat: number;
  nbf: number;
  exp: number;
  jti: string;
  token_type: TokenType;
  /**
   * The login session (a Spool extension claim): the jti of the refresh
   * token minted at login, carried by that refresh token and by every access
   * token minted from it. Revoking it (logout) refuses them all. Absent on
   * tokens issued before sessions existed.
   */
  sid?: string;
}

export const ACCESS_TOKEN_SECONDS = 24 * 3600;
export const REFRESH_TOKEN_SECONDS = 24 * ACCESS_TOKEN_SECONDS;

/**
 * HS256 tokens (docs/compatibility.md §1.3). The secret is JWT_SECRET, or one generated
 * on first start and kept in the database so every replica shares it.
 */
export class TokenService {
  readonly #key: Uint8Array;

  private constructor(secret: string) {
    this.#key = new TextEncoder().encode(secret);
  }

  static async create(db: Db, configured: string | null): Promise<TokenService> {
    if (configured) return new TokenService(configured);
    const candidate = randomBytes(48).toString('base64url');
    const result = await db.query<{ value: string }>(
      `INSERT INTO spool.server_settings (name, value) VALUES ('jwt_secret', $1)
       ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING value`,
      [candidate],
    );
    return new TokenService(result.rows[0]!.value);
  }

  /**
   * `sessionId` becomes the `sid` claim (a new session when absent); a
   * refresh token's jti is its session id (see TokenClaims.sid).
   */
  async sign(input: { organizationId: string; apiKeyId: string; queues: string[]; type: TokenType; sessionId?: string }): Promise<{ token: string; claims: TokenClaims }> {
    const now = Math.floor(Date.now() / 1000);
    const sessionId = input.sessionId ?? randomUUID();
    const lifetime = input.type === 'access' ? ACCESS_TOKEN_SECONDS : REFRESH_TOKEN_SECONDS;
    const claims: TokenClaims = {
      sub: input.organizationId,
      org_id: input.organizationId,
      api_key_id: input.apiKeyId,
      queues: input.queues,
      iat: now,
      nbf: now,
      exp: now + lifetime,
      jti: input.type === 'refresh' ? sessionId : randomUUID(),
      token_type: input.type,
      sid: sessionId,
    };
    const token = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(this.#key);
    return { token, claims };
  }

  /** Verified claims, or a reason the token is not acceptable. */
  async verify(token: string): Promise<{ ok: true; claims: TokenClaims } | { ok: false; reason: string }> {
    try {
      const { payload } = await jwtVerify(token, this.#key, { algorithms: ['HS256'] });
      const claims = payload as unknown as TokenClaims;
      if (typeof claims.org_id !== 'string' || typeof claims.api_key_id !== 'string' || typeof claims.jti !== 'string' || typeof claims.exp !== 'number') {
        return { ok: false, reason: 'Token is missing required claims' };
      }
      if (claims.token_type !== 'access' && claims.token_type !== 'refresh') return { ok: false, reason: 'Unknown token type' };
      if (claims.sid !== undefined && typeof claims.sid !== 'string') return { ok: false, reason: 'Token is missing required claims' };
      return { ok: true, claims };
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) return { ok: false, reason: 'Token has expired' };
      return { ok: false, reason: 'Invalid token' };
    }
  }
}
