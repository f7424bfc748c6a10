import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { loadConfig, startSpool, type Config } from '@spool/server';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { startTestServer } from '../../../test-support/server.js';

const databases: TestDatabase[] = [];
after(async () => {
  for (const database of databases) await database.drop();
});

function configFor(database: TestDatabase, overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), databaseUrl: database.url, host: '127.0.0.1', port: 0, grpcPort: 0, logLevel: 'silent', ...overrides };
}

describe('first start', () => {
  it('creates a development organization on the unlimited plan (not DEFAULT_PLAN) and shows its key once', async () => {
    const database = await createTestDatabase('firststart');
    databases.push(database);
    const messages: string[] = [];
    const announced: string[] = [];
    // The first start also shows the generated metrics operator token (metrics.test.ts); here: the key.
    const announce = (m: string) => (announced.push(m), m.includes('sk_test_') && messages.push(m));
    const config = configFor(database, { defaultPlan: 'starter' });
    const spool = await startSpool(config, { logger: pino({ level: 'silent' }), announce });
    try {
      assert.equal(messages.length, 1);
      assert.equal(announced.length, 2, 'the key and the metrics operator token');
      const key = /(sk_test_[A-Za-z0-9_-]{43})/.exec(messages[0]!)?.[1];
      assert.ok(key, messages[0]);
      assert.match(messages[0]!, new RegExp(`curl .*Bearer ${key}.*/api/v1/dashboard`));
      const usage = await fetch(`${spool.url}/api/v1/organizations/usage`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(usage.status, 200);
      const info = (await usage.json()) as { plan: string; limits: { unlimited: boolean } };
      assert.deepEqual([info.plan, info.limits.unlimited], ['enterprise', true], 'the unlimited plan, as the SDKs can read it');
    } finally {
      await spool.stop();
    }
    const again = await startSpool(config, { logger: pino({ level: 'silent' }), announce });
    await again.stop();
    assert.equal(messages.length, 1, 'a database that has organizations gets no new one');
    assert.equal(announced.length, 3, 'nor a new metrics token: only how to get a key');
    assert.match(announced[2]!, /To get an API key for the development organization .*\n.*X-Admin-Key: <the operator token printed at first start>.*\/api\/v1\/admin\/organizations\/[0-9a-f-]{36}\/api-keys/);
    assert.match(announced[2]!, /Lost the operator token\? Set ADMIN_API_KEY/, 'an external database keeps no token file');
    const { rows } = await database.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.organizations');
    assert.equal(rows[0]!.n, 1);
  });

  it('creates no organization in production', async () => {
    const database = await createTestDatabase('firstprod');
    databases.push(database);
    const messages: string[] = [];
    const spool = await startSpool(configFor(database, { environment: 'production' }), { logger: pino({ level: 'silent' }), announce: (m) => messages.push(m) });
    await spool.stop();
    // Production creates no organization; it does show the generated metrics operator token, once, and how to get a key.
    assert.equal(messages.length, 2);
    assert.match(messages[0]!, /operator token for \/metrics/);
    assert.doesNotMatch(messages[0]!, /admin key/, 'in production the operator token opens /metrics only');
    assert.match(messages[1]!, /the admin API is off in production until ADMIN_API_KEY is set/);
    for (const message of messages) assert.doesNotMatch(message, /sk_(test|live)_/);
    const { rows } = await database.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.organizations');
    assert.equal(rows[0]!.n, 0);
  });
});

describe('database connections', () => {
  it('run with generic plans (plan_cache_mode = force_generic_plan) unless DATABASE_PLAN_CACHE_MODE says otherwise', async () => {
    const database = await createTestDatabase('plancache');
    databases.push(database);
    // A database-level setting stands for `server` (null: no SET), and is overridden by an explicit mode.
    await database.pool.query(`ALTER DATABASE "${database.name}" SET plan_cache_mode = force_custom_plan`);
    for (const [mode, expected] of [['force_generic_plan', 'force_generic_plan'], ['auto', 'auto'], [null, 'force_custom_plan']] as const) {
      const spool = await startSpool(configFor(database, { planCacheMode: mode }), { logger: pino({ level: 'silent' }), announce: () => {} });
      try {
        // Every connection of the pool, not only the first: hold several at once.
        const clients = await Promise.all(Array.from({ length: 3 }, () => spool.db.connect()));
        try {
          for (const client of clients) assert.equal((await client.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode')).rows[0]!.plan_cache_mode, expected, `planCacheMode ${mode}`);
        } finally {
          for (const client of clients) client.release();
        }
      } finally {
        await spool.stop();
      }
    }
  });
});

describe('logs', () => {
  it('never contain API keys, tokens or payloads', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const server = await startTestServer('logging', {}, { logger: pino({ level: 'trace' }, sink) });
    try {
      const marker = 'PAYLOAD-SECRET-7f3a';
      const created = await server.request('POST', '/api/v1/organizations', { auth: null, body: { name: 'Log Co', slug: 'log-co', billing_email: 'secret-mail@log.test' } });
      assert.equal(created.status, 201);
      const orgKey = created.body.api_key.key as string;
      const login = await server.request('POST', '/api/v1/auth/login', { auth: null, body: { api_key: orgKey } });
      const { access_token, refresh_token } = login.body as { access_token: string; refresh_token: string };
      await server.request('POST', '/api/v1/jobs', { auth: orgKey, body: { queue_name: 'q', payload: { secret: marker } } });
      await server.request('POST', '/api/v1/jobs', { auth: access_token, body: { queue_name: 'q', payload: { secret: marker }, priority: 'wrong type' } });
      await server.request('POST', '/api/v1/jobs', { auth: orgKey, rawBody: `{"queue_name":"q","payload":"${marker}` });
      await server.request('POST', '/api/v1/auth/refresh', { auth: null, body: { refresh_token } });
      // An SSE stream never ends by itself: read the headers, then hang up.
      const stream = new AbortController();
      const events = await fetch(`${server.url}/api/v1/events?token=${access_token}&x=1`, { signal: stream.signal });
      assert.equal(events.status, 200);
      stream.abort();
      await server.request('GET', '/api/v1/dashboard', { auth: 'sk_test_unknownKeyThatShouldNotBeLogged000000000000' });
      const created2 = await server.request('POST', '/api/v1/api-keys', { auth: orgKey, body: { name: 'logged key' } });
      assert.equal(created2.status, 201);
      await server.request('GET', '/api/v1/admin/stats', { auth: null, headers: { 'x-admin-key': 'test-admin-key' } });
      await new Promise((resolve) => setTimeout(resolve, 50));

      const text = lines.join('');
      assert.ok(lines.length > 10, 'requests are logged (so this test can fail)');
      assert.match(text, /\/api\/v1\/events\?token=\[REDACTED\]&x=1/, 'credentials in query strings are masked');
      for (const secret of [server.apiKey, orgKey, access_token, refresh_token, created2.body.key, marker, 'sk_test_unknownKeyThatShouldNotBeLogged', 'test-admin-key', 'secret-mail@log.test']) {
        assert.ok(!text.includes(secret), `the log contains ${secret.slice(0, 16)}…`);
      }
      assert.ok(!/authorization/i.test(text), 'no headers are logged');
    } finally {
      await server.close();
    }
  });
});

describe('shutdown', () => {
  it('does not wait for a connection that never sent a request (HTTP clients open spare ones)', async () => {
    const server = await startTestServer('spare-socket');
    const { connect } = await import('node:net');
    const spare = connect(Number(new URL(server.url).port), '127.0.0.1');
    await new Promise((resolve, reject) => spare.once('connect', resolve).once('error', reject));
    spare.on('error', () => {});
    const started = Date.now();
    const stopped = server.spool.stop();
    // Without the fix the stop waited as long as the spare connection stayed open (minutes).
    const first = await Promise.race([stopped.then(() => 'stopped'), new Promise((resolve) => setTimeout(resolve, 5_000, 'still waiting'))]);
    const elapsed = Date.now() - started;
    spare.destroy();
    await stopped;
    await server.close();
    assert.equal(first, 'stopped', `stop() still waiting after ${elapsed} ms`);
  });
});
