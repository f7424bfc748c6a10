import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SignJWT, decodeJwt } from 'jose';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('auth');
});
after(async () => server.close());

async function login(apiKey = server.apiKey) {
  const response = await server.request('POST', '/api/v1/auth/login', { body: { api_key: apiKey }, auth: null });
  assert.equal(response.status, 200, response.text);
  return response.body as { access_token: string; refresh_token: string };
}

async function newKey(body: Record<string, unknown> = { name: 'extra' }) {
  const created = await server.request('POST', '/api/v1/api-keys', { body });
  assert.equal(created.status, 201, created.text);
  return created.body as { id: string; key: string };
}

async function signWithServerSecret(claims: Record<string, unknown>): Promise<string> {
  const { rows } = await server.spool.db.query<{ value: string }>("SELECT value FROM spool.server_settings WHERE name = 'jwt_secret'");
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(rows[0]!.value));
}

describe('POST /auth/login', () => {
  it('exchanges an API key for an access and a refresh token with numeric exp and a unique jti', async () => {
    const response = await server.request('POST', '/api/v1/auth/login', { body: { api_key: server.apiKey }, auth: null });
    assert.equal(response.status, 200);
    assert.deepEqual(Object.keys(response.body).sort(), ['access_token', 'expires_in', 'refresh_expires_in', 'refresh_token', 'token_type']);
    assert.equal(response.body.token_type, 'Bearer');
    assert.equal(response.body.expires_in, 86_400);
    assert.equal(response.body.refresh_expires_in, 24 * 86_400);
    const access = decodeJwt(response.body.access_token);
    const refresh = decodeJwt(response.body.refresh_token);
    assert.equal(access.token_type, 'access');
    assert.equal(refresh.token_type, 'refresh');
    assert.equal(typeof access.exp, 'number');
    assert.equal(access.org_id, server.organizationId);
    assert.notEqual(access.jti, refresh.jti);
    const again = await login();
    assert.notEqual(decodeJwt(again.access_token).jti, access.jti);
  });

  it('refuses unknown, revoked and expired keys with 401', async () => {
    assert.equal((await server.request('POST', '/api/v1/auth/login', { body: { api_key: 'sk_test_doesnotexist' }, auth: null })).status, 401);
    const revoked = await newKey({ name: 'to revoke' });
    assert.equal((await server.request('DELETE', `/api/v1/api-keys/${revoked.id}`)).status, 204);
    assert.equal((await server.request('POST', '/api/v1/auth/login', { body: { api_key: revoked.key }, auth: null })).status, 401);
    const expired = await newKey({ name: 'to expire' });
    await server.spool.db.query("UPDATE spool.api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [expired.id]);
    const refused = await server.request('POST', '/api/v1/auth/login', { body: { api_key: expired.key }, auth: null });
    assert.equal(refused.status, 401);
    assert.match(refused.body.message, /expired/);
    const { access_token } = await login();
    assert.equal((await server.request('POST', '/api/v1/auth/login', { body: { api_key: access_token }, auth: null })).status, 401, 'a JWT is not an API key');
  });

  it('validates the body: missing, wrong type, too short, malformed JSON', async () => {
    const missing = await server.request('POST', '/api/v1/auth/login', { body: {}, auth: null });
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /api_key/);
    const empty = await server.request('POST', '/api/v1/auth/login', { rawBody: '', auth: null });
    assert.equal(empty.status, 400);
    assert.match(empty.body.message, /api_key/);
    const wrongType = await server.request('POST', '/api/v1/auth/login', { body: { api_key: 12345678901 }, auth: null });
    assert.equal(wrongType.status, 400);
    assert.match(wrongType.body.message, /api_key/);
    const short = await server.request('POST', '/api/v1/auth/login', { body: { api_key: 'sk_x' }, auth: null });
    assert.equal(short.status, 400);
    assert.match(short.body.message, /api_key/);
    const malformed = await server.request('POST', '/api/v1/auth/login', { rawBody: '{"api_key":', auth: null });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.code, 'BAD_REQUEST');
  });
});

describe('access tokens as credentials', () => {
  it('authenticate like the key they came from, and /auth/me describes them', async () => {
    const { access_token } = await login();
    const dashboard = await server.request('GET', '/api/v1/dashboard', { auth: access_token });
    assert.equal(dashboard.status, 200);
    const me = await server.request('GET', '/api/v1/auth/me', { auth: access_token });
    assert.equal(me.status, 200);
    assert.deepEqual(Object.keys(me.body).sort(), ['api_key_id', 'expires_at', 'issued_at', 'organization_id', 'queues']);
    assert.equal(me.body.organization_id, server.organizationId);
    assert.deepEqual(me.body.queues, ['*']);
    const claims = decodeJwt(access_token);
    assert.equal(me.body.expires_at, new Date(claims.exp! * 1000).toISOString());
  });

  it('/auth/me refuses an API key, a refresh token and no credential with 401', async () => {
    const { refresh_token } = await login();
    assert.equal((await server.request('GET', '/api/v1/auth/me')).status, 401);
    assert.equal((await server.request('GET', '/api/v1/auth/me', { auth: refresh_token })).status, 401);
    assert.equal((await server.request('GET', '/api/v1/auth/me', { auth: null })).status, 401);
  });

  it('refuses a refresh token as a bearer credential', async () => {
    const { refresh_token } = await login();
    const response = await server.request('GET', '/api/v1/dashboard', { auth: refresh_token });
    assert.equal(response.status, 401);
    assert.match(response.body.message, /refresh/i);
  });

  it('refuses tampered, foreign-secret and expired JWTs', async () => {
    const { access_token } = await login();
    const [header, payload, signature] = access_token.split('.') as [string, string, string];
    const flipped = `${header}.${payload}.${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: flipped })).status, 401);
    const other = await server.createOrganization();
    const forgedPayload = Buffer.from(JSON.stringify({ ...decodeJwt(access_token), org_id: other.organizationId, sub: other.organizationId })).toString('base64url');
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: `${header}.${forgedPayload}.${signature}` })).status, 401);
    const foreign = await new SignJWT({ ...decodeJwt(access_token) }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('not the server secret'));
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: foreign })).status, 401);
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: none })).status, 401);

    const now = Math.floor(Date.now() / 1000);
    const base = decodeJwt(access_token);
    const expired = await signWithServerSecret({ ...base, jti: randomUUID(), iat: now - 7200, nbf: now - 7200, exp: now - 60 });
    const refused = await server.request('GET', '/api/v1/dashboard', { auth: expired });
    assert.equal(refused.status, 401);
    assert.match(refused.body.message, /expired/i);
    const valid = await signWithServerSecret({ ...base, jti: randomUUID(), iat: now, nbf: now, exp: now + 60 });
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: valid })).status, 200, 'the same secret and fresh claims do authenticate (the test can fail)');
  });

  it("stop working as soon as their key is revoked", async () => {
    const key = await newKey({ name: 'jwt source' });
    const { access_token, refresh_token } = await login(key.key);
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: access_token })).status, 200);
    assert.equal((await server.request('DELETE', `/api/v1/api-keys/${key.id}`)).status, 204);
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: access_token })).status, 401);
    assert.equal((await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token }, auth: null })).status, 401);
  });
});

describe('POST /auth/refresh', () => {
  it('returns a new, different access token', async () => {
    const { access_token, refresh_token } = await login();
    const response = await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token }, auth: null });
    assert.equal(response.status, 200);
    assert.deepEqual(Object.keys(response.body).sort(), ['access_token', 'expires_in', 'token_type']);
    assert.notEqual(response.body.access_token, access_token);
    assert.notEqual(decodeJwt(response.body.access_token).jti, decodeJwt(access_token).jti);
    assert.equal(decodeJwt(response.body.access_token).token_type, 'access');
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: response.body.access_token })).status, 200);
  });

  it('refuses an access token, garbage and a missing token', async () => {
    const { access_token } = await login();
    assert.equal((await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: access_token }, auth: null })).status, 401);
    assert.equal((await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: 'eyJnot.a.jwt' }, auth: null })).status, 401);
    const missing = await server.request('POST', '/api/v1/auth/refresh', { body: {}, auth: null });
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /refresh_token/);
    const wrongType = await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: 42 }, auth: null });
    assert.equal(wrongType.status, 400);
  });
});

describe('POST /auth/logout', () => {
  it('revokes the presented access token and the given refresh token (204, no body)', async () => {
    const { access_token, refresh_token } = await login();
    const response = await server.request('POST', '/api/v1/auth/logout', { body: { refresh_token }, auth: access_token });
    assert.equal(response.status, 204);
    assert.equal(response.text, '');
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: access_token })).status, 401);
    assert.equal((await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token }, auth: null })).status, 401);
    assert.equal((await server.request('POST', '/api/v1/auth/logout', { auth: access_token })).status, 401, 'a revoked token cannot log out again');
  });

  it("ends the session as the SDK logs out (JSON content type, empty body, access token only): the login's refresh token and its access tokens fail", async () => {
    const { access_token, refresh_token } = await login();
    const refreshed = await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token }, auth: null });
    assert.equal(refreshed.status, 200);
    const minted = refreshed.body.access_token as string;
    const other = await login();

    const response = await fetch(`${server.url}/api/v1/auth/logout`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${access_token}` }, body: '' });
    assert.equal(response.status, 204);

    const again = await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token }, auth: null });
    assert.equal(again.status, 401);
    assert.equal(again.body.code, 'AUTHENTICATION_FAILED');
    assert.match(again.body.message, /revoked/);
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: minted })).status, 401, 'an access token minted from the session before logout');
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: access_token })).status, 401);
    assert.equal((await server.request('POST', '/api/v1/auth/validate', { body: { token: refresh_token }, auth: null })).body.valid, false);

    // Another login of the same key is another session.
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: other.access_token })).status, 200);
    assert.equal((await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: other.refresh_token }, auth: null })).status, 200);
  });

  it('ends the session when logging out with an access token minted by /auth/refresh, and keeps the refresh token usable until then (no rotation)', async () => {
    const { access_token, refresh_token } = await login();
    const minted: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const refreshed = await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token }, auth: null });
      assert.equal(refreshed.status, 200, 'the refresh token from login keeps working');
      assert.deepEqual(Object.keys(refreshed.body).sort(), ['access_token', 'expires_in', 'token_type']);
      minted.push(refreshed.body.access_token);
    }
    assert.equal((await server.request('POST', '/api/v1/auth/logout', { rawBody: '', auth: minted[1]! })).status, 204);
    for (const token of [access_token, minted[0]!, minted[1]!]) assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: token })).status, 401);
    assert.equal((await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token }, auth: null })).status, 401);
    const kept = await server.spool.db.query<{ days: number }>('SELECT extract(epoch FROM expires_at - now()) / 86400 AS days FROM spool.revoked_tokens WHERE jti = $1', [decodeJwt(refresh_token).jti]);
    assert.ok(Number(kept.rows[0]!.days) > 24, 'the session stays revoked past its refresh token, until its last access token has expired');
  });

  it('tokens issued before sessions (no sid) keep working; logging out with one minted from an old refresh token ends that refresh token', async () => {
    const keyId = (await newKey({ name: 'before sessions' })).id;
    const now = Math.floor(Date.now() / 1000);
    const base = { sub: server.organizationId, org_id: server.organizationId, api_key_id: keyId, queues: ['*'], iat: now, nbf: now };
    const oldAccess = await signWithServerSecret({ ...base, jti: randomUUID(), exp: now + 3600, token_type: 'access' });
    const oldRefresh = await signWithServerSecret({ ...base, jti: randomUUID(), exp: now + 86_400, token_type: 'refresh' });
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: oldAccess })).status, 200);
    assert.equal((await server.request('POST', '/api/v1/auth/logout', { rawBody: '', auth: oldAccess })).status, 204);
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: oldAccess })).status, 401);
    const refreshed = await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: oldRefresh }, auth: null });
    assert.equal(refreshed.status, 200, 'an old access token could not name its refresh token: that one keeps working, as before');
    assert.equal((await server.request('POST', '/api/v1/auth/logout', { rawBody: '', auth: refreshed.body.access_token })).status, 204);
    assert.equal((await server.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: oldRefresh }, auth: null })).status, 401);
  });

  it('accepts an empty body, and an API key as a no-op', async () => {
    const { access_token } = await login();
    assert.equal((await server.request('POST', '/api/v1/auth/logout', { rawBody: '', auth: access_token })).status, 204);
    assert.equal((await server.request('POST', '/api/v1/auth/logout', { rawBody: '' })).status, 204);
    assert.equal((await server.request('GET', '/api/v1/dashboard')).status, 200, 'the API key still works');
    assert.equal((await server.request('POST', '/api/v1/auth/logout', { auth: null })).status, 401);
  });
});

describe('POST /auth/validate', () => {
  it('always answers 200 and says whether the token is valid', async () => {
    const { access_token, refresh_token } = await login();
    const valid = await server.request('POST', '/api/v1/auth/validate', { body: { token: access_token }, auth: null });
    assert.equal(valid.status, 200);
    assert.equal(valid.body.valid, true);
    assert.equal(valid.body.claims.organization_id, server.organizationId);
    assert.equal(valid.body.claims.org_id, server.organizationId);
    assert.equal(valid.body.claims.token_type, 'access');
    assert.equal(typeof valid.body.claims.exp, 'number');
    const refresh = await server.request('POST', '/api/v1/auth/validate', { body: { token: refresh_token }, auth: null });
    assert.equal(refresh.body.valid, true);
    assert.equal(refresh.body.claims.token_type, 'refresh');
    for (const body of [{ token: 'garbage' }, { token: `${access_token}x` }, {}, { token: 5 }]) {
      const invalid = await server.request('POST', '/api/v1/auth/validate', { body, auth: null });
      assert.equal(invalid.status, 200);
      assert.equal(invalid.body.valid, false);
      assert.equal(typeof invalid.body.message, 'string');
      assert.equal(invalid.body.claims, null);
    }
    await server.request('POST', '/api/v1/auth/logout', { auth: access_token });
    const revoked = await server.request('POST', '/api/v1/auth/validate', { body: { token: access_token }, auth: null });
    assert.equal(revoked.body.valid, false);
    assert.match(revoked.body.message, /revoked/);
  });
});

describe('email sign-in', () => {
  it('is not available: 404 from both routes', async () => {
    const start = await server.request('POST', '/api/v1/auth/email/start', { body: { email: 'a@example.com' }, auth: null });
    assert.equal(start.status, 404);
    assert.equal(start.body.code, 'NOT_FOUND');
    assert.equal((await server.request('GET', '/api/v1/auth/check-email?email=a@example.com', { auth: null })).status, 404);
  });
});

describe('API key credentials', () => {
  it('refuse missing, malformed, unknown, revoked, expired keys and keys of a deleted organization with 401', async () => {
    const cases: [string, Record<string, string> | undefined, string | null][] = [
      ['missing', undefined, null],
      ['basic scheme', { authorization: `Basic ${server.apiKey}` }, null],
      ['bearer without a value', { authorization: 'Bearer' }, null],
      ['unknown sk_ key', undefined, 'sk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
      ['not a key at all', undefined, 'hello-world'],
    ];
    for (const [name, headers, auth] of cases) {
      const response = await server.request('GET', '/api/v1/dashboard', { auth, headers });
      assert.equal(response.status, 401, name);
      assert.equal(response.body.code, 'AUTHENTICATION_FAILED', name);
    }

    const key = await newKey({ name: 'revoke me' });
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: key.key })).status, 200);
    assert.equal((await server.request('DELETE', `/api/v1/api-keys/${key.id}`)).status, 204);
    const revoked = await server.request('GET', '/api/v1/dashboard', { auth: key.key });
    assert.equal(revoked.status, 401, 'a revoked key fails on its very next request');
    assert.match(revoked.body.message, /revoked/);

    const expiring = await newKey({ name: 'expire me', expires_at: new Date(Date.now() + 60_000).toISOString() });
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: expiring.key })).status, 200);
    // Changed behind the server's back, as another replica or an operator
    // would: the server forgets its cached copy when the NOTIFY arrives.
    const heard = server.spool.apiKeys.counters.invalidations;
    await server.spool.db.query("UPDATE spool.api_keys SET expires_at = now() - interval '1 millisecond' WHERE id = $1", [expiring.id]);
    while (server.spool.apiKeys.counters.invalidations === heard) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: expiring.key })).status, 401);

    const doomed = await server.createOrganization();
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: doomed.apiKey })).status, 200);
    const deleted = await server.request('DELETE', `/api/v1/admin/organizations/${doomed.organizationId}`, { headers: { 'x-admin-key': 'test-admin-key' } });
    assert.equal(deleted.status, 204);
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: doomed.apiKey })).status, 401);
  });
});
