/**
 * The API-key cache (http/api-key-cache.ts): repeated requests skip the
 * authentication query, and every change that can refuse a key reaches every
 * server at once, whether made through this server, another replica on the
 * same database, or SQL behind both their backs (migration 012's NOTIFY).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { Notifier } from '@spool/engine';
import { loadConfig, startSpool, type RunningSpool } from '@spool/server';
import { ApiKeyCache } from '../src/http/api-key-cache.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
/** A second replica on the same database. */
let replica: RunningSpool;

before(async () => {
  server = await startTestServer('api-key-cache', { authCacheMs: 2_000 });
  replica = await startSpool(
    { ...loadConfig({}), databaseUrl: server.database.url, host: '127.0.0.1', port: 0, grpcPort: 0, logLevel: 'silent', adminApiKey: 'test-admin-key', defaultPlan: 'unlimited', authCacheMs: 2_000 },
    { logger: pino({ level: 'silent' }), announce: () => {} },
  );
});
after(async () => {
  await replica?.stop();
  await server?.close();
});

async function get(base: string, apiKey: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/api/v1/dashboard`, { headers: { authorization: `Bearer ${apiKey}` } });
  return { status: res.status, body: await res.json() };
}

async function heardBy(spool: RunningSpool, since: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (spool.apiKeys.counters.invalidations === since) {
    assert.ok(Date.now() < deadline, 'the change never reached this server');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('API-key cache', () => {
  it('serves repeated requests with one key from memory', async () => {
    const org = await server.createOrganization();
    const { hits, misses } = server.spool.apiKeys.counters;
    for (let i = 0; i < 5; i++) assert.equal((await get(server.url, org.apiKey)).status, 200);
    assert.equal(server.spool.apiKeys.counters.misses - misses, 1, 'one authentication query');
    assert.equal(server.spool.apiKeys.counters.hits - hits, 4);
  });

  it('never caches an unknown key', async () => {
    const { hits } = server.spool.apiKeys.counters;
    for (let i = 0; i < 3; i++) assert.equal((await get(server.url, 'sk_test_nosuchkey')).status, 401);
    assert.equal(server.spool.apiKeys.counters.hits, hits);
  });

  it('neither serves nor fills the cache while its LISTEN connection is down (a missed NOTIFY could not be noticed)', async () => {
    const org = await server.createOrganization();
    const notifier = new Notifier({ connectionString: server.database.url });
    const cache = new ApiKeyCache(server.spool.db, notifier); // never started: not listening
    for (let i = 0; i < 3; i++) assert.ok(await cache.lookup(org.apiKey));
    assert.deepEqual({ hits: cache.counters.hits, misses: cache.counters.misses }, { hits: 0, misses: 3 });
    await notifier.start();
    try {
      for (let i = 0; i < 3; i++) assert.ok(await cache.lookup(org.apiKey));
      assert.deepEqual({ hits: cache.counters.hits, misses: cache.counters.misses }, { hits: 2, misses: 4 }, 'listening: cached');
    } finally {
      await notifier.stop();
    }
  });

  it('does not store a lookup that began before a change', async () => {
    const org = await server.createOrganization();
    const cache = server.spool.apiKeys;
    const looking = cache.lookup(org.apiKey);
    cache.forget(); // a change lands while the query is in flight
    assert.ok(await looking);
    const { misses } = cache.counters;
    assert.ok(await cache.lookup(org.apiKey));
    assert.equal(cache.counters.misses, misses + 1, 'the next request queries again');
  });

  it('a key revoked through one replica fails on the other as soon as it hears of it', async () => {
    const org = await server.createOrganization();
    assert.equal((await get(server.url, org.apiKey)).status, 200);
    assert.equal((await get(replica.url, org.apiKey)).status, 200);
    assert.equal((await get(replica.url, org.apiKey)).status, 200, 'cached on the replica');
    const heard = replica.apiKeys.counters.invalidations;
    const revoke = await server.request('DELETE', `/api/v1/api-keys/${org.apiKeyId}`, { auth: org.apiKey });
    assert.equal(revoke.status, 204);
    const here = await get(server.url, org.apiKey);
    assert.equal(here.status, 401, 'the revoking server forgets at once');
    assert.match(here.body.message, /revoked/);
    await heardBy(replica, heard);
    assert.equal((await get(replica.url, org.apiKey)).status, 401);
  });

  it('a plan change made in SQL behind both servers reaches them through NOTIFY', async () => {
    const org = await server.createOrganization();
    assert.equal((await get(server.url, org.apiKey)).status, 200);
    const heard = server.spool.apiKeys.counters.invalidations;
    await server.spool.db.query("UPDATE spool.organizations SET plan_tier = 'deleted' WHERE id = $1", [org.organizationId]);
    await heardBy(server.spool, heard);
    const refused = await get(server.url, org.apiKey);
    assert.equal(refused.status, 401);
    assert.match(refused.body.message, /deleted/);
  });

  it('routine writes (last_used touches, daily job counters) do not empty the cache', async () => {
    const org = await server.createOrganization();
    assert.equal((await get(server.url, org.apiKey)).status, 200);
    const heard = server.spool.apiKeys.counters.invalidations;
    await server.spool.db.query('UPDATE spool.api_keys SET last_used = now() WHERE organization_id = $1', [org.organizationId]);
    await server.spool.db.query('UPDATE spool.organizations SET jobs_today = jobs_today + 1 WHERE id = $1', [org.organizationId]);
    // A change that does notify, committed after them: notifications arrive
    // in commit order, so once it is heard, theirs would have been too.
    await server.spool.db.query('UPDATE spool.api_keys SET rate_limit = 500 WHERE organization_id = $1', [org.organizationId]);
    await heardBy(server.spool, heard);
    assert.equal(server.spool.apiKeys.counters.invalidations, heard + 1);
  });
});
