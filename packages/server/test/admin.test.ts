import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('admin');
});
after(async () => server.close());

const ADMIN = { 'x-admin-key': 'test-admin-key' };
const admin = (method: string, path: string, body?: unknown) => server.request(method, `/api/v1/admin${path}`, { body, headers: ADMIN });
const slug = (prefix: string) => `${prefix}-${randomBytes(3).toString('hex')}`;

describe('admin authentication', () => {
  it('needs the right X-Admin-Key (401 otherwise) and ignores Authorization', async () => {
    for (const headers of [{} as Record<string, string>, { 'x-admin-key': 'wrong' }, { 'x-admin-key': 'test-admin-key-but-longer' }, { 'x-admin-key': '' }]) {
      const response = await server.request('GET', '/api/v1/admin/stats', { headers });
      assert.equal(response.status, 401, JSON.stringify(headers));
      assert.equal(typeof response.body.error, 'string');
      assert.equal(typeof response.body.message, 'string');
    }
    assert.equal((await server.request('GET', '/api/v1/admin/stats', { headers: ADMIN, auth: 'sk_test_garbage' })).status, 200);
    assert.equal((await server.request('GET', '/api/v1/admin/stats', { headers: ADMIN, auth: null })).status, 200);
  });

  it('is disabled (401) when ADMIN_API_KEY is not configured', async () => {
    const unconfigured = await startTestServer('adminoff', { adminApiKey: null });
    try {
      const response = await unconfigured.request('GET', '/api/v1/admin/plans', { headers: ADMIN });
      assert.equal(response.status, 401);
      assert.match(response.body.message, /ADMIN_API_KEY/);
    } finally {
      await unconfigured.close();
    }
  });
});

describe('the operator token as the admin key', () => {
  const mint = (target: TestServer, key: string) => target.request('POST', `/api/v1/admin/organizations/${target.organizationId}/api-keys`, { auth: null, body: { name: 'minted' }, headers: { 'x-admin-key': key } });

  it('in development without ADMIN_API_KEY, the operator token mints a key; nothing else does', async () => {
    const dev = await startTestServer('adminoperator', { adminApiKey: null, metricsToken: 'operator-token-dev-1234' });
    try {
      const minted = await mint(dev, 'operator-token-dev-1234');
      assert.equal(minted.status, 201, minted.text);
      assert.equal((await dev.request('GET', '/api/v1/dashboard', { auth: minted.body.key })).status, 200);
      const wrong = await mint(dev, 'operator-token-dev-1235');
      assert.equal(wrong.status, 401);
      assert.match(wrong.body.message, /send the operator token .*or set ADMIN_API_KEY/);
      // Closed registration takes the same credential.
      const closed = await startTestServer('adminoperatorclosed', { adminApiKey: null, metricsToken: 'operator-token-dev-5678', registrationMode: 'closed' });
      try {
        const body = { name: 'Closed Co', slug: slug('closed') };
        assert.equal((await closed.request('POST', '/api/v1/organizations', { auth: null, body })).status, 403);
        assert.equal((await closed.request('POST', '/api/v1/organizations', { auth: null, body, headers: { 'x-admin-key': 'operator-token-dev-5678' } })).status, 201);
      } finally {
        await closed.close();
      }
    } finally {
      await dev.close();
    }
  });

  it('once ADMIN_API_KEY is set, only it is the admin key', async () => {
    const both = await startTestServer('adminboth', { adminApiKey: 'the-admin-key-1234', metricsToken: 'operator-token-both-1234' });
    try {
      assert.equal((await mint(both, 'operator-token-both-1234')).status, 401);
      assert.equal((await mint(both, 'the-admin-key-1234')).status, 201);
    } finally {
      await both.close();
    }
  });

  it('in production without ADMIN_API_KEY the admin API is off: the operator token opens /metrics only', async () => {
    const production = await startTestServer('adminprod', { adminApiKey: null, metricsToken: 'operator-token-prod-1234', environment: 'production' });
    try {
      const refused = await mint(production, 'operator-token-prod-1234');
      assert.equal(refused.status, 401);
      assert.match(refused.body.message, /disabled in production until ADMIN_API_KEY is set/);
      const metrics = await fetch(`${production.url}/metrics`, { headers: { authorization: 'Bearer operator-token-prod-1234' } });
      assert.equal(metrics.status, 200);
      await metrics.arrayBuffer();
    } finally {
      await production.close();
    }
  });
});

describe('admin organizations', () => {
  it('creates an organization on a chosen plan with a working key (201)', async () => {
    const created = await admin('POST', '/organizations', { name: 'Pro Customer', slug: slug('pro'), plan_tier: 'pro', billing_email: 'b@pro.test' });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.organization.plan_tier, 'pro');
    assert.deepEqual(Object.keys(created.body.api_key).sort(), ['created_at', 'id', 'key', 'name']);
    const usage = await server.request('GET', '/api/v1/organizations/usage', { auth: created.body.api_key.key });
    assert.equal(usage.body.plan, 'pro');
    const defaulted = await admin('POST', '/organizations', { name: 'Default Plan', slug: slug('default-plan') });
    // The server's DEFAULT_PLAN, unlimited: tier enterprise on the wire (the SDKs' models know only the contract's four).
    assert.deepEqual([defaulted.body.organization.plan_tier, defaulted.body.organization.unlimited], ['enterprise', true]);
    assert.equal(created.body.organization.unlimited, false);
    for (const body of [{ name: 'X Co', slug: slug('x'), plan_tier: 'platinum' }, { name: 'X Co', slug: 'admin' }, { name: 'X Co' }]) {
      assert.equal((await admin('POST', '/organizations', body)).status, 400, JSON.stringify(body));
    }
    assert.equal((await admin('POST', '/organizations', { name: 'Dup', slug: created.body.organization.slug })).status, 409);
  });

  it('lists organizations enveloped, with usage, filters, sorting and paging', async () => {
    const marker = randomBytes(3).toString('hex');
    const ids: string[] = [];
    for (const [name, plan] of [[`Zeta ${marker}`, 'starter'], [`Alpha ${marker}`, 'starter'], [`Mid ${marker}`, 'free']] as const) {
      ids.push((await admin('POST', '/organizations', { name, slug: slug(name.split(' ')[0]!.toLowerCase()), plan_tier: plan })).body.organization.id);
    }
    const page = await admin('GET', `/organizations?search=${marker}&sort_by=name&sort_order=asc&limit=2`);
    assert.equal(page.status, 200);
    assert.deepEqual(Object.keys(page.body).sort(), ['limit', 'offset', 'organizations', 'total']);
    assert.equal(page.body.total, 3);
    assert.equal(page.body.limit, 2);
    assert.deepEqual(page.body.organizations.map((o: { name: string }) => o.name), [`Alpha ${marker}`, `Mid ${marker}`]);
    const row = page.body.organizations[0];
    assert.deepEqual(Object.keys(row).sort(), ['billing_email', 'created_at', 'id', 'name', 'plan_tier', 'slug', 'unlimited', 'updated_at', 'usage']);
    assert.deepEqual(Object.keys(row.usage).sort(), ['active_jobs', 'api_keys', 'jobs_today', 'queues', 'workers']);
    assert.equal(row.usage.api_keys, 1);
    const next = await admin('GET', `/organizations?search=${marker}&sort_by=name&sort_order=asc&limit=2&offset=2`);
    assert.deepEqual(next.body.organizations.map((o: { name: string }) => o.name), [`Zeta ${marker}`]);
    const starters = await admin('GET', `/organizations?search=${marker}&plan_tier=starter&sort_by=name&sort_order=desc`);
    assert.deepEqual(starters.body.organizations.map((o: { name: string }) => o.name), [`Zeta ${marker}`, `Alpha ${marker}`]);
    const clamped = await admin('GET', '/organizations?limit=5000');
    assert.equal(clamped.body.limit, 100, 'out-of-range limit is clamped');
    assert.equal((await admin('GET', '/organizations?limit=0')).body.limit, 1);
    const unknownSort = await admin('GET', '/organizations?sort_by=drop_table&sort_order=up');
    assert.equal(unknownSort.status, 200, 'unknown sort columns fall back to created_at');
    assert.match(unknownSort.headers.get('warning') ?? '', /299 - "sort_by=drop_table ignored \(not one of name, slug, plan_tier, updated_at, created_at\): sorted by created_at", 299 - "sort_order=up ignored .*sorted descending"/);
    // An unknown plan filter is ignored like the jobs list's unknown status, and named.
    const unknownPlan = await admin('GET', `/organizations?search=${marker}&plan_tier=team`);
    assert.equal(unknownPlan.body.total, 3);
    assert.match(unknownPlan.headers.get('warning') ?? '', /plan_tier=team ignored \(not one of free, starter, pro, enterprise, unlimited, deleted\): not filtered by it/);
    assert.equal(starters.headers.get('warning'), null);
    assert.equal((await admin('GET', '/organizations?offset=-1')).status, 400);
    assert.equal((await admin('GET', '/organizations?limit=abc')).status, 400);
  });

  it('shows one organization with usage info, key count and job total', async () => {
    const created = await admin('POST', '/organizations', { name: 'Detail Co', slug: slug('detail'), plan_tier: 'starter' });
    const key = created.body.api_key.key as string;
    for (let i = 0; i < 3; i += 1) assert.equal((await server.request('POST', '/api/v1/jobs', { auth: key, body: { queue_name: 'q', payload: { i } } })).status, 201);
    const detail = await admin('GET', `/organizations/${created.body.organization.id}`);
    assert.equal(detail.status, 200);
    assert.deepEqual(Object.keys(detail.body).sort(), ['api_keys_count', 'billing_email', 'created_at', 'custom_limits', 'id', 'name', 'plan_tier', 'settings', 'slug', 'total_jobs', 'unlimited', 'updated_at', 'usage_info']);
    assert.equal(detail.body.total_jobs, 3);
    assert.equal(detail.body.api_keys_count, 1);
    assert.equal(detail.body.usage_info.usage.jobs_today.current, 3);
    assert.equal(detail.body.usage_info.usage.active_jobs.current, 3);
    assert.equal(detail.body.usage_info.limits.tier, 'starter');
    assert.equal((await admin('GET', '/organizations/not-a-uuid')).status, 404);
    assert.equal((await admin('GET', '/organizations/00000000-0000-4000-8000-000000000000')).status, 404);
  });

  it('PATCH changes plan, billing email, settings and custom limits; limits follow', async () => {
    const created = await admin('POST', '/organizations', { name: 'Patch Co', slug: slug('patch'), plan_tier: 'free' });
    const id = created.body.organization.id as string;
    const key = created.body.api_key.key as string;
    const patched = await admin('PATCH', `/organizations/${id}`, { plan_tier: 'starter', billing_email: 'new@patch.test', settings: { region: 'eu' }, custom_limits: { max_active_jobs: 2, someThingElse: true } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.plan_tier, 'starter');
    assert.deepEqual(patched.body.custom_limits, { max_active_jobs: 2, someThingElse: true });
    // Settings are replaced, except the webhook token generated at creation.
    assert.deepEqual(patched.body.settings, { region: 'eu', webhook_token: created.body.organization.settings.webhook_token });
    assert.match(created.body.organization.settings.webhook_token, /^whk_/);
    const usage = await server.request('GET', '/api/v1/organizations/usage', { auth: key });
    assert.equal(usage.body.limits.max_active_jobs, 2);
    assert.equal(usage.body.limits.max_queues, 10);
    for (let i = 0; i < 2; i += 1) assert.equal((await server.request('POST', '/api/v1/jobs', { auth: key, body: { queue_name: 'q', payload: {} } })).status, 201);
    assert.equal((await server.request('POST', '/api/v1/jobs', { auth: key, body: { queue_name: 'q', payload: {} } })).status, 403, 'custom limit enforced');
    const cleared = await admin('PATCH', `/organizations/${id}`, { custom_limits: null });
    assert.equal(cleared.body.custom_limits, null);
    assert.equal(cleared.body.billing_email, 'new@patch.test', 'absent fields are kept');
    assert.equal((await admin('PATCH', `/organizations/${id}`, { custom_limits: { max_active_jobs: -1 } })).status, 400);
    assert.equal((await admin('PATCH', `/organizations/${id}`, { plan_tier: 'gold' })).status, 400);
    assert.equal((await admin('PATCH', '/organizations/00000000-0000-4000-8000-000000000000', { plan_tier: 'pro' })).status, 404);
  });

  it('creates keys for an organization and resets its daily usage', async () => {
    const created = await admin('POST', '/organizations', { name: 'Keys Co', slug: slug('keys'), plan_tier: 'free' });
    const id = created.body.organization.id as string;
    const key = await admin('POST', `/organizations/${id}/api-keys`, { name: 'ops key', queues: ['a', 'b'] });
    assert.equal(key.status, 201);
    assert.deepEqual(Object.keys(key.body).sort(), ['created_at', 'id', 'key', 'name']);
    assert.equal((await server.request('POST', '/api/v1/jobs', { auth: key.body.key, body: { queue_name: 'a', payload: {} } })).status, 201);
    assert.equal((await server.request('POST', '/api/v1/jobs', { auth: key.body.key, body: { queue_name: 'c', payload: {} } })).status, 403, 'queue scope applies');
    assert.equal((await admin('POST', '/organizations/00000000-0000-4000-8000-000000000000/api-keys', { name: 'x' })).status, 404);
    assert.equal((await admin('POST', `/organizations/${id}/api-keys`, {})).status, 400);

    // Usage is organization-level: a key limited to some queues may not read it (docs/tenancy.md).
    assert.equal((await server.request('GET', '/api/v1/organizations/usage', { auth: key.body.key })).status, 403);
    const everyQueue = (await admin('POST', `/organizations/${id}/api-keys`, { name: 'usage key' })).body.key;
    const before = await server.request('GET', '/api/v1/organizations/usage', { auth: everyQueue });
    assert.equal(before.body.usage.jobs_today.current, 1);
    const reset = await server.request('POST', `/api/v1/admin/organizations/${id}/reset-usage`, { headers: ADMIN, rawBody: '' });
    assert.equal(reset.status, 204);
    const afterReset = await server.request('GET', '/api/v1/organizations/usage', { auth: everyQueue });
    assert.equal(afterReset.body.usage.jobs_today.current, 0);
    assert.equal((await admin('POST', '/organizations/nope/reset-usage')).status, 404);
  });

  it('soft-deletes (plan "deleted", keys stop working) or hard-deletes', async () => {
    const soft = await admin('POST', '/organizations', { name: 'Soft Co', slug: slug('soft') });
    assert.equal((await server.request('POST', '/api/v1/jobs', { auth: soft.body.api_key.key, body: { queue_name: 'q', payload: {} } })).status, 201);
    assert.equal((await admin('DELETE', `/organizations/${soft.body.organization.id}`)).status, 204);
    assert.equal((await admin('GET', `/organizations/${soft.body.organization.id}`)).body.plan_tier, 'deleted');
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: soft.body.api_key.key })).status, 401);

    const hard = await admin('POST', '/organizations', { name: 'Hard Co', slug: slug('hard') });
    assert.equal((await server.request('POST', '/api/v1/jobs', { auth: hard.body.api_key.key, body: { queue_name: 'q', payload: {} } })).status, 201);
    assert.equal((await admin('DELETE', `/organizations/${hard.body.organization.id}?hard_delete=true`)).status, 204, 'hard delete ignores active jobs');
    assert.equal((await admin('GET', `/organizations/${hard.body.organization.id}`)).status, 404);
    assert.equal((await admin('DELETE', `/organizations/${hard.body.organization.id}?hard_delete=true`)).status, 404);
    assert.equal((await admin('DELETE', `/organizations/${soft.body.organization.id}?hard_delete=maybe`)).status, 400);
  });
});

describe('admin stats and plans', () => {
  it('GET /admin/stats reports platform figures', async () => {
    const stats = await admin('GET', '/stats');
    assert.equal(stats.status, 200);
    assert.deepEqual(Object.keys(stats.body).sort(), ['jobs', 'organizations', 'system', 'workers']);
    assert.deepEqual(Object.keys(stats.body.organizations).sort(), ['by_plan', 'created_this_week', 'created_today', 'total']);
    assert.deepEqual(Object.keys(stats.body.jobs).sort(), ['completed_24h', 'failed_24h', 'pending', 'processing', 'total_active']);
    assert.deepEqual(Object.keys(stats.body.workers).sort(), ['degraded', 'healthy', 'total']);
    assert.equal(typeof stats.body.system.api_version, 'string');
    const { rows } = await server.spool.db.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.organizations');
    assert.equal(stats.body.organizations.total, rows[0]!.n);
    const sum = stats.body.organizations.by_plan.reduce((total: number, p: { count: number }) => total + p.count, 0);
    assert.equal(sum, rows[0]!.n);
  });

  it('GET /admin/plans lists the contract tiers plus unlimited (as enterprise on the wire), every key present', async () => {
    const plans = await admin('GET', '/plans');
    assert.equal(plans.status, 200);
    assert.deepEqual(plans.body.map((p: { tier: string }) => p.tier), ['free', 'starter', 'pro', 'enterprise', 'enterprise']);
    assert.deepEqual(plans.body.map((p: { spool_tier: string }) => p.spool_tier), ['free', 'starter', 'pro', 'enterprise', 'unlimited']);
    assert.deepEqual(plans.body.map((p: { unlimited: boolean }) => p.unlimited), [false, false, false, false, true]);
    const free = plans.body[0];
    assert.equal(free.max_active_jobs, 10);
    assert.equal(free.max_queues, 2);
    assert.equal(free.max_workers, 1);
    assert.equal(free.max_workflows, 0);
    assert.equal(free.max_payload_size_bytes, 65_536);
    const enterprise = plans.body[3];
    assert.ok('max_jobs_per_day' in enterprise);
    assert.equal(enterprise.max_jobs_per_day, null);
    assert.equal(enterprise.rate_limit_burst, 1000);
    for (const plan of plans.body) assert.equal(Object.keys(plan).length, 18);
    const unlimited = plans.body[4];
    assert.equal(unlimited.display_name, 'Unlimited (self-hosted)');
    assert.equal(Object.values(unlimited).filter((v) => v === null).length, 8, 'unlimited: every max_* count null');
    // Integers where the Python SDK's model requires them: the real body cap, and int32 max for "none".
    assert.equal(unlimited.max_payload_size_bytes, 1024 * 1024);
    assert.deepEqual([unlimited.rate_limit_requests_per_second, unlimited.rate_limit_burst, unlimited.job_retention_days, unlimited.history_retention_days], [2147483647, 2147483647, 2147483647, 2147483647]);
    assert.deepEqual(unlimited.no_limit, ['rate_limit_requests_per_second', 'rate_limit_burst', 'job_retention_days', 'history_retention_days']);
    for (const plan of plans.body.slice(0, 4)) assert.deepEqual(plan.no_limit, [], plan.tier);
  });
});
