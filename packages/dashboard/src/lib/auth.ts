import { api, ApiError } from './api';
import { endSession, getSession, startSession } from './session';

interface LoginResponse {
  access_token: string;
  expires_in: number;
}

interface Claims {
  api_key_id?: string;
  org_id?: string;
  exp?: number;
}

/** Reads (does not verify) a JWT's claims: the server verifies; the UI only labels. */
function claimsOf(token: string): Claims {
  try {
    const part = token.split('.')[1] ?? '';
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '='));
    return JSON.parse(json) as Claims;
  } catch {
    return {};
  }
}

/**
 * Exchanges an API key for an access token (POST /auth/login). The refresh
 * token is dropped on purpose: the session lasts as long as the access
 * token, and a refresh token never kept cannot leak. On a server without
 * /auth/login the key itself becomes the bearer credential for the tab.
 */
export async function signIn(apiKey: string): Promise<void> {
  const key = apiKey.trim();
  if (!/^(sk|sp)_/.test(key)) throw new ApiError(400, 'VALIDATION_ERROR', 'An API key starts with sk_ (or sp_)');
  try {
    const login = await api<LoginResponse>('POST', '/auth/login', { body: { api_key: key }, anonymous: true });
    const claims = claimsOf(login.access_token);
    startSession({
      token: login.access_token,
      kind: 'jwt',
      apiKeyId: claims.api_key_id ?? null,
      organizationId: claims.org_id ?? null,
      expiresAt: typeof claims.exp === 'number' ? claims.exp * 1000 : Date.now() + login.expires_in * 1000,
    });
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) throw new ApiError(401, err.code, 'That API key is not valid, or it was revoked or has expired');
    if (!(err instanceof ApiError && err.missingEndpoint)) throw err;
    // No /auth/login on this server: check the key on a cheap call and use it directly.
    const probe = await fetch('/api/v1/jobs/stats', { headers: { authorization: `Bearer ${key}` } });
    if (probe.status === 401) throw new ApiError(401, 'AUTHENTICATION_FAILED', 'That API key is not valid, or it was revoked or has expired');
    startSession({ token: key, kind: 'api_key', apiKeyId: null, organizationId: null, expiresAt: null });
  }
}

/** Revokes the access token on the server (best effort) and clears the session. */
export async function signOut(): Promise<void> {
  const session = getSession();
  if (session?.kind === 'jwt') {
    await api('POST', '/auth/logout', { keepSessionOn401: true }).catch(() => undefined);
  }
  endSession(null);
}
