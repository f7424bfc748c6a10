/**
 * Ingestion around the edges of the server: the server-wide provider
 * secrets as a lone organization's fallback, the HTTPS rule and proxy
 * headers in production (TRUST_PROXY), the per-IP rate limit behind and
 * without a proxy, the development key file, and the first-start
 * organization's webhook token. The per-organization rules themselves are in
 * incoming-webhooks.test.ts.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '@spool/server';
import { ensureDevelopmentOrganization } from '../src/first-start.js';
import { createTestDatabase } from '../../../test-support/db.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const ADMIN = { 'x-admin-key': 'test-admin-key' };
const sign = (body: string, secret: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

async function tokenOf(server: TestServer, apiKey = server.apiKey): Promise<string> {
  return (await server.request('GET', '/api/v1/organizations/webhook-token', { auth: apiKey })).body.token;
}

async function jobCount(server: TestServer, organizationId: string, queue: string): Promise<number> {
  const result = await server.spool.db.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2', [organizationId, queue]);
  return result.rows[0]!.n;
}

describe('server-wide GITHUB_WEBHOOK_SECRET / STRIPE_WEBHOOK_SECRET', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'spool-ingest-'));
  let server: TestServer;
  after(async () => {
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('verify deliveries only while exactly one live organization exists and it has no secret of its own', async () => {
    server = await startTestServer('ingestfallback', { githubWebhookSecret: 'server-wide', stripeWebhookSecret: 'whsec_server', dataDir, secretsKey: null });
    // The first-start development organization is the second one: remove it.
    const others = await server.spool.db.query<{ id: string }>('SELECT id FROM spool.organizations WHERE id <> $1', [server.organizationId]);
    for (const row of others.rows) {
      assert.equal((await server.request('DELETE', `/api/v1/admin/organizations/${row.id}?hard_delete=true`, { auth: null, headers: ADMIN })).status, 204);
    }
    const path = `/api/v1/webhooks/${server.organizationId}/github`;
    const body = (n: number) => JSON.stringify({ n, r: randomBytes(4).toString('hex') });
    const first = body(1);
    assert.equal((await server.request('POST', path, { auth: null, rawBody: first, headers: { 'x-github-event': 'push', 'x-hub-signature-256': sign(first, 'server-wide') } })).status, 200);

    // A second live organization: the server-wide secret no longer proves which one a delivery is for.
    const second = await server.createOrganization();
    const again = body(2);
    assert.equal((await server.request('POST', path, { auth: null, rawBody: again, headers: { 'x-github-event': 'push', 'x-hub-signature-256': sign(again, 'server-wide') } })).status, 401);
    assert.equal((await server.request('POST', `/api/v1/webhooks/${second.organizationId}/github`, { auth: null, rawBody: again, headers: { 'x-github-event': 'push', 'x-hub-signature-256': sign(again, 'server-wide') } })).status, 401);
    const t = Math.floor(Date.now() / 1000);
    const event = JSON.stringify({ id: 'evt_fallback', type: 'charge.succeeded', data: { object: {} } });
    const stripeSig = `t=${t},v1=${createHmac('sha256', 'whsec_server').update(`${t}.${event}`).digest('hex')}`;
    assert.equal((await server.request('POST', `/api/v1/webhooks/${server.organizationId}/stripe`, { auth: null, rawBody: event, headers: { 'stripe-signature': stripeSig } })).status, 401);

    // Soft-deleted organizations do not count: alone again, the fallback applies.
    assert.equal((await server.request('DELETE', `/api/v1/admin/organizations/${second.organizationId}`, { auth: null, headers: ADMIN })).status, 204);
    assert.equal((await server.request('POST', `/api/v1/webhooks/${server.organizationId}/stripe`, { auth: null, rawBody: event, headers: { 'stripe-signature': stripeSig } })).status, 200);
    const third = body(3);
    assert.equal((await server.request('POST', path, { auth: null, rawBody: third, headers: { 'x-github-event': 'push', 'x-hub-signature-256': sign(third, 'server-wide') } })).status, 200);

    // Its own secret replaces the fallback. Without SPOOL_SECRETS_KEY, development seals it with a key file (0600) in the data dir.
    assert.equal((await server.request('PUT', '/api/v1/organizations/webhook-secrets/github', { body: { secret: 'own-secret' } })).status, 200);
    const keyFile = statSync(join(dataDir, 'secrets.key'));
    assert.equal(keyFile.mode & 0o777, 0o600);
    const fourth = body(4);
    assert.equal((await server.request('POST', path, { auth: null, rawBody: fourth, headers: { 'x-github-event': 'push', 'x-hub-signature-256': sign(fourth, 'server-wide') } })).status, 401);
    assert.equal((await server.request('POST', path, { auth: null, rawBody: fourth, headers: { 'x-github-event': 'push', 'x-hub-signature-256': sign(fourth, 'own-secret') } })).status, 200);
    assert.equal(await jobCount(server, server.organizationId, 'github-push'), 3);
  });
});

describe('production: HTTPS only, and X-Forwarded-* only from TRUST_PROXY', () => {
  let direct: TestServer;
  let proxied: TestServer;
  after(async () => {
    await direct?.close();
    await proxied?.close();
  });

  it('ignores X-Forwarded-Proto from a client that is not a trusted proxy', async () => {
    direct = await startTestServer('ingestdirect', { environment: 'production', secretsKey: null, publicRateLimitPerMinute: 5 });
    const token = await tokenOf(direct);
    const response = await direct.request('POST', `/api/v1/webhooks/${direct.organizationId}/custom`, {
      auth: null, body: { queue_name: 'q', payload: {} }, headers: { 'x-webhook-token': token, 'x-forwarded-proto': 'https' },
    });
    assert.equal(response.status, 400, response.text);
    assert.match(response.body.message, /HTTPS.*TRUST_PROXY/);
    assert.equal(await jobCount(direct, direct.organizationId, 'q'), 0);
    const url = await direct.request('GET', '/api/v1/organizations/webhook-token', { headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' } });
    assert.ok(url.body.webhook_url.startsWith(`${direct.url}/`), url.body.webhook_url);
  });

  it('refuses to store a signing secret without SPOOL_SECRETS_KEY, saying what to set', async () => {
    const response = await direct.request('PUT', '/api/v1/organizations/webhook-secrets/stripe', { body: { secret: 'whsec_x' } });
    assert.equal(response.status, 409, response.text);
    assert.equal(response.body.code, 'CONFLICT');
    assert.match(response.body.message, /SPOOL_SECRETS_KEY/);
    assert.equal((await direct.request('GET', '/api/v1/organizations/webhook-secrets')).body.stripe.configured, false);
  });

  it('does not let a spoofed X-Forwarded-For evade the per-IP limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const response = await direct.request('POST', `/api/v1/webhooks/${direct.organizationId}/custom`, { auth: null, rawBody: '{}', headers: { 'x-forwarded-for': `203.0.113.${i}` } });
      statuses.push(response.status);
    }
    assert.ok(statuses.includes(429), statuses.join(','));
  });

  it('honours X-Forwarded-Proto and -For from a proxy listed in TRUST_PROXY', async () => {
    proxied = await startTestServer('ingestproxied', { environment: 'production', secretsKey: randomBytes(32), trustProxy: ['127.0.0.1', '::1'], publicRateLimitPerMinute: 5 });
    const token = await tokenOf(proxied);
    const path = `/api/v1/webhooks/${proxied.organizationId}/custom`;
    const ok = await proxied.request('POST', path, { auth: null, body: { queue_name: 'q', payload: {} }, headers: { 'x-webhook-token': token, 'x-forwarded-proto': 'https', 'x-forwarded-for': '198.51.100.1' } });
    assert.equal(ok.status, 200, ok.text);
    const plain = await proxied.request('POST', path, { auth: null, body: { queue_name: 'q', payload: {} }, headers: { 'x-webhook-token': token, 'x-forwarded-for': '198.51.100.1' } });
    assert.equal(plain.status, 400, 'the proxy says the client used plain HTTP');
    assert.equal(await jobCount(proxied, proxied.organizationId, 'q'), 1);
    const url = await proxied.request('GET', '/api/v1/organizations/webhook-token', { headers: { 'x-forwarded-proto': 'https' } });
    assert.ok(url.body.webhook_url.startsWith('https://'), url.body.webhook_url);
    // Each forwarded client has its own budget: six clients are not limited, one client sending six is.
    for (let i = 0; i < 6; i++) {
      assert.notEqual((await proxied.request('POST', path, { auth: null, rawBody: '{}', headers: { 'x-forwarded-for': `198.51.100.${10 + i}` } })).status, 429);
    }
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await proxied.request('POST', path, { auth: null, rawBody: '{}', headers: { 'x-forwarded-for': '198.51.100.99' } })).status);
    assert.ok(statuses.includes(429), statuses.join(','));
  });
});

describe('TRUST_PROXY parsing', () => {
  it('takes a hop count or addresses/CIDRs and names the variable on a bad value', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1,loopback' }).trustProxy, ['10.0.0.0/8', '127.0.0.1', '::1', 'loopback']);
    assert.throws(() => loadConfig({ TRUST_PROXY: 'everyone' }), /TRUST_PROXY/);
    assert.throws(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' }), /TRUST_PROXY/);
  });

  it('takes SPOOL_SECRETS_KEY as 32 bytes of hex or base64 only', () => {
    const key = randomBytes(32);
    assert.deepEqual(loadConfig({ SPOOL_SECRETS_KEY: key.toString('hex') }).secretsKey, key);
    assert.deepEqual(loadConfig({ SPOOL_SECRETS_KEY: key.toString('base64') }).secretsKey, key);
    assert.throws(() => loadConfig({ SPOOL_SECRETS_KEY: randomBytes(16).toString('base64') }), /SPOOL_SECRETS_KEY/);
  });
});

describe('first-start development organization', () => {
  it('has a webhook token like every other new organization', async () => {
    const database = await createTestDatabase('ingestfirst');
    try {
      const created = await ensureDevelopmentOrganization(database.pool, { ...loadConfig({}), environment: 'development' });
      assert.ok(created);
      const row = await database.pool.query<{ token: string | null }>("SELECT settings ->> 'webhook_token' AS token FROM spool.organizations WHERE id = $1", [created.organizationId]);
      assert.match(row.rows[0]!.token ?? '', /^whk_[A-Za-z0-9_-]{32}$/);
    } finally {
      await database.drop();
    }
  });
});
