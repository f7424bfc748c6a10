/**
 * Rate limits hold across replicas: two servers on one database share each
 * budget (spool.rate_limit_counters) instead of granting one each. The two
 * servers run in this process, each with its own HTTP listener and limiter,
 * which is all that separate processes would add to the counting.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RateLimitPruner } from '@spool/engine';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { startTestServerOn, type TestServer } from '../../../test-support/server.js';

let database: TestDatabase;
let a: TestServer;
let b: TestServer;
const PUBLIC_PER_MINUTE = 6;

before(async () => {
  database = await createTestDatabase('ratelimitreplicas');
  a = await startTestServerOn(database, 'rl-a', { publicRateLimitPerMinute: PUBLIC_PER_MINUTE });
  b = await startTestServerOn(database, 'rl-b', { publicRateLimitPerMinute: PUBLIC_PER_MINUTE });
});
after(async () => {
  await b?.spool.stop();
  await a?.close();
});

/** A free-plan organization whose key may make `burst` requests per `burst` seconds (a window no test run outlasts). */
async function limitedOrganization(burst: number) {
  const org = await a.createOrganization('free');
  await a.spool.db.query('UPDATE spool.organizations SET custom_limits = $2 WHERE id = $1', [org.organizationId, { rate_limit_requests_per_second: 1, rate_limit_burst: burst }]);
  return org;
}

describe('rate limits across replicas', () => {
  it('a key limited to N requests per window gets N in all, however its requests are spread over two replicas', async () => {
    const org = await limitedOrganization(10);
    const statuses: number[] = [];
    for (let i = 0; i < 20; i += 1) {
      const replica = i % 2 === 0 ? a : b;
      statuses.push((await replica.request('GET', '/api/v1/dashboard', { auth: org.apiKey })).status);
    }
    assert.equal(statuses.filter((s) => s === 200).length, 10, `statuses ${statuses.join(',')}`);
    assert.deepEqual(statuses.slice(10), Array(10).fill(429));
    const refused = await b.request('GET', '/api/v1/dashboard', { auth: org.apiKey });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.code, 'RATE_LIMIT_EXCEEDED');
    assert.match(refused.body.message, /^Rate limit exceeded: 10 requests per 10 s; retry in \d+ s$/);
    assert.equal(refused.headers.get('x-ratelimit-limit'), '10');
    assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 10, `Retry-After ${retryAfter}`);
  });

  it('an access token counts against its key on every replica', async () => {
    const org = await limitedOrganization(4);
    const login = await a.request('POST', '/api/v1/auth/login', { auth: null, body: { api_key: org.apiKey } });
    assert.equal(login.status, 200);
    const statuses: number[] = [];
    for (const [replica, auth] of [[a, org.apiKey], [b, login.body.access_token], [b, org.apiKey], [a, login.body.access_token], [b, login.body.access_token]] as const) {
      statuses.push((await replica.request('GET', '/api/v1/dashboard', { auth })).status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 429]);
  });

  it('the public per-IP limit (logins, registration) is shared too', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < PUBLIC_PER_MINUTE * 2; i += 1) {
      const replica = i % 2 === 0 ? a : b;
      statuses.push((await replica.request('POST', '/api/v1/auth/login', { auth: null, body: { api_key: replica.apiKey } })).status);
    }
    // The login of the test above used one of this minute's six.
    assert.equal(statuses.filter((s) => s === 200).length, PUBLIC_PER_MINUTE - 1, `statuses ${statuses.join(',')}`);
    assert.equal(statuses.filter((s) => s === 429).length, PUBLIC_PER_MINUTE + 1);
    const registration = await b.request('POST', '/api/v1/organizations', { auth: null, body: { name: 'Too Many', slug: 'too-many-replicas' } });
    assert.equal(registration.status, 429);
    assert.ok(Number(registration.headers.get('retry-after')) > 0);
  });

  it('an unlimited key costs no counter; an exhausted budget is refused without counting again', async () => {
    for (let i = 0; i < 5; i += 1) assert.equal((await a.request('GET', '/api/v1/dashboard')).status, 200);
    const keys = await a.spool.db.query('SELECT bucket FROM spool.rate_limit_counters WHERE bucket LIKE $1', ['key:%']);
    const unlimitedKey = (await a.spool.db.query<{ id: string }>('SELECT id FROM spool.api_keys WHERE organization_id = $1', [a.organizationId])).rows[0]!.id;
    assert.ok(!keys.rows.some((row) => row.bucket === `key:${unlimitedKey}`));

    const org = await limitedOrganization(3);
    for (let i = 0; i < 8; i += 1) await a.request('GET', '/api/v1/dashboard', { auth: org.apiKey });
    const counted = await a.spool.db.query<{ hits: number }>('SELECT hits FROM spool.rate_limit_counters WHERE bucket = $1', [`key:${org.apiKeyId}`]);
    assert.equal(counted.rows[0]!.hits, 4, 'the first refusal is counted, the ones after it are answered by the replica alone');
  });

  it('fails open (no 500) when the counters cannot be reached', async () => {
    const org = await limitedOrganization(3);
    await a.spool.db.query('ALTER TABLE spool.rate_limit_counters RENAME TO rate_limit_counters_away');
    try {
      for (let i = 0; i < 5; i += 1) {
        const response = await a.request('GET', '/api/v1/dashboard', { auth: org.apiKey });
        assert.equal(response.status, 200, response.text);
        assert.equal(response.headers.get('x-ratelimit-limit'), null);
      }
    } finally {
      await a.spool.db.query('ALTER TABLE spool.rate_limit_counters_away RENAME TO rate_limit_counters');
    }
    assert.equal((await a.request('GET', '/api/v1/dashboard', { auth: org.apiKey })).headers.get('x-ratelimit-limit'), '3', 'counted again once the counters are back');
  });

  it('the pruner forgets counters of windows that ended, and keeps live ones', async () => {
    await a.spool.db.query(`INSERT INTO spool.rate_limit_counters (bucket, window_end, hits) VALUES ('ip:old', now() - interval '2 minutes', 5), ('ip:live', now() + interval '1 minute', 5)`);
    assert.ok(await new RateLimitPruner(a.spool.db).runOnce() > 0);
    const left = await a.spool.db.query<{ bucket: string }>(`SELECT bucket FROM spool.rate_limit_counters WHERE bucket IN ('ip:old', 'ip:live')`);
    assert.deepEqual(left.rows.map((row) => row.bucket), ['ip:live']);
  });
});
