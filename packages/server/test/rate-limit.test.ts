import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('ratelimit', { publicRateLimitPerMinute: 8 });
});
after(async () => server.close());

describe('per-key rate limits', () => {
  it("limit a key to its plan's burst and answer 429 with Retry-After and X-RateLimit-*", async () => {
    const org = await server.createOrganization('free');
    // The free plan's burst of 10 over a 10 s window (rps 1 instead of 5), so a slow machine cannot roll the window over mid-test.
    await server.spool.db.query(`UPDATE spool.organizations SET custom_limits = '{"rate_limit_requests_per_second": 1}' WHERE id = $1`, [org.organizationId]);
    const first = await server.request('GET', '/api/v1/dashboard', { auth: org.apiKey });
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-ratelimit-limit'), '10');
    assert.equal(first.headers.get('x-ratelimit-remaining'), '9');
    const reset = Number(first.headers.get('x-ratelimit-reset'));
    assert.ok(reset > Date.now() / 1000 && reset <= Date.now() / 1000 + 11, 'X-RateLimit-Reset is a unix time in seconds');

    const statuses: number[] = [];
    for (let i = 0; i < 12; i += 1) statuses.push((await server.request('GET', '/api/v1/dashboard', { auth: org.apiKey })).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 200, 200, 200, 429, 429, 429]);
    const refused = await server.request('GET', '/api/v1/jobs/00000000-0000-4000-8000-000000000000', { auth: org.apiKey });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.code, 'RATE_LIMIT_EXCEEDED');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 10, `Retry-After ${retryAfter}`);
    assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
    assert.equal(refused.headers.get('x-ratelimit-limit'), '10');
  });

  it('let a refused key through again once Retry-After has passed', async () => {
    const org = await server.createOrganization('unlimited');
    const key = await server.request('POST', '/api/v1/api-keys', { auth: org.apiKey, body: { name: 'two per second', rate_limit: 2 } });
    const statuses: number[] = [];
    let retryAfter = 0;
    for (let i = 0; i < 3; i += 1) {
      const response = await server.request('GET', '/api/v1/dashboard', { auth: key.body.key });
      statuses.push(response.status);
      retryAfter = Number(response.headers.get('retry-after') ?? 0);
    }
    assert.equal(statuses.at(-1), 429);
    assert.equal(retryAfter, 1);
    await sleep(retryAfter * 1000 + 50);
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: key.body.key })).status, 200);
  });

  it('count each key separately, and an access token against its key', async () => {
    const org = await server.createOrganization('unlimited');
    const limited = await server.request('POST', '/api/v1/api-keys', { auth: org.apiKey, body: { name: 'three per second', rate_limit: 3 } });
    assert.equal(limited.status, 201);
    const login = await server.request('POST', '/api/v1/auth/login', { auth: null, body: { api_key: limited.body.key } });
    assert.equal(login.status, 200);
    const token = login.body.access_token as string;
    const statuses: number[] = [];
    for (const auth of [limited.body.key, token, limited.body.key, token]) statuses.push((await server.request('GET', '/api/v1/dashboard', { auth })).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    for (let i = 0; i < 30; i += 1) {
      const unlimited = await server.request('GET', '/api/v1/dashboard', { auth: org.apiKey });
      assert.equal(unlimited.status, 200, 'the other key of the same organization is unaffected; the unlimited plan has no limit');
      assert.equal(unlimited.headers.get('x-ratelimit-limit'), null);
    }
  });
});

describe('per-IP limits on unauthenticated routes', () => {
  it('limit logins per client IP, not per key prefix, and never limit health checks', async () => {
    const keys: string[] = [];
    for (let i = 0; i < 3; i += 1) keys.push((await server.createOrganization()).apiKey);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i += 1) {
      statuses.push((await server.request('POST', '/api/v1/auth/login', { auth: null, body: { api_key: keys[i % 3] } })).status);
    }
    // Eight per minute per IP on this server; the login in the test above used one.
    assert.equal(statuses.filter((s) => s === 200).length, 7);
    assert.equal(statuses.filter((s) => s === 429).length, 3);
    const refused = await server.request('POST', '/api/v1/organizations', { auth: null, body: { name: 'Too Many', slug: 'too-many' } });
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    for (let i = 0; i < 20; i += 1) assert.equal((await server.request('GET', '/health', { auth: null })).status, 200);
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: keys[0] })).status, 200, 'authenticated routes use the key budget');
  });
});

describe('body limits', () => {
  it('answer an oversized request body with 413', async () => {
    const huge = JSON.stringify({ queue_name: 'q', payload: { blob: 'z'.repeat(7 * 1024 * 1024) } });
    const response = await server.request('POST', '/api/v1/jobs', { rawBody: huge });
    assert.equal(response.status, 413);
    assert.equal(response.body.code, 'PAYLOAD_TOO_LARGE');
    const bigPayload = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'q', payload: { blob: 'z'.repeat(1024 * 1024 + 10) } } });
    assert.equal(bigPayload.status, 413);
  });
});
