import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('orgs', { defaultPlan: 'free' });
});
after(async () => server.close());

const ORGANIZATION_KEYS = [
  'billing_email', 'created_at', 'custom_limits', 'id', 'name', 'plan_tier', 'settings', 'slug', 'stripe_cancel_at_period_end',
  'stripe_current_period_end', 'stripe_customer_id', 'stripe_subscription_id', 'stripe_subscription_status', 'unlimited', 'updated_at',
];

const uniqueSlug = (prefix = 'acme') => `${prefix}-${randomBytes(3).toString('hex')}`;

async function register(body: Record<string, unknown>, headers?: Record<string, string>) {
  return server.request('POST', '/api/v1/organizations', { body, auth: null, headers });
}

describe('POST /organizations (public registration)', () => {
  it('creates an organization on the default plan with a working initial key (201)', async () => {
    const slug = uniqueSlug();
    const response = await register({ name: 'Acme Inc', slug, billing_email: 'billing@acme.test' });
    assert.equal(response.status, 201, response.text);
    assert.deepEqual(Object.keys(response.body).sort(), ['api_key', 'organization']);
    assert.deepEqual(Object.keys(response.body.organization).sort(), ORGANIZATION_KEYS);
    assert.equal(response.body.organization.plan_tier, 'free');
    assert.equal(response.body.organization.slug, slug);
    assert.equal(response.body.organization.billing_email, 'billing@acme.test');
    assert.equal(response.body.organization.stripe_customer_id, null);
    assert.deepEqual(Object.keys(response.body.api_key).sort(), ['created_at', 'id', 'key', 'name']);
    assert.equal(response.body.api_key.name, 'Initial Admin Key');
    assert.match(response.body.api_key.key, /^sk_test_[A-Za-z0-9_-]{43}$/);
    const me = await server.request('GET', '/api/v1/organizations', { auth: response.body.api_key.key });
    assert.equal(me.status, 200);
    assert.deepEqual(me.body, [{ id: response.body.organization.id, name: 'Acme Inc', slug, plan_tier: 'free', created_at: response.body.organization.created_at, unlimited: false }]);
    const keys = await server.request('GET', '/api/v1/api-keys', { auth: response.body.api_key.key });
    assert.deepEqual(keys.body[0].queues, ['*']);
  });

  it('refuses a duplicate slug with 409', async () => {
    const slug = uniqueSlug();
    assert.equal((await register({ name: 'First', slug })).status, 201);
    const second = await register({ name: 'Second', slug });
    assert.equal(second.status, 409);
    assert.equal(second.body.code, 'CONFLICT');
    assert.match(second.body.message, /slug/);
  });

  it('enforces name and slug rules with 400 naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ name: 'ab', slug: uniqueSlug() }, /name/],
      [{ name: 'x'.repeat(101), slug: uniqueSlug() }, /name/],
      [{ name: 42, slug: uniqueSlug() }, /name/],
      [{ slug: uniqueSlug() }, /name/],
      [{ name: 'Good name' }, /slug/],
      [{ name: 'Good name', slug: 'ab' }, /slug/],
      [{ name: 'Good name', slug: 'a'.repeat(51) }, /slug/],
      [{ name: 'Good name', slug: 'Upper-Case' }, /slug/],
      [{ name: 'Good name', slug: '1starts-with-digit' }, /slug/],
      [{ name: 'Good name', slug: 'double--hyphen' }, /slug/],
      [{ name: 'Good name', slug: 'trailing-' }, /slug/],
      [{ name: 'Good name', slug: 'admin' }, /reserved/],
      [{ name: 'Good name', slug: 'dashboard' }, /reserved/],
      [{ name: 'Good name', slug: uniqueSlug(), billing_email: 'not an email' }, /billing_email/],
    ];
    for (const [body, message] of cases) {
      const response = await register(body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.body.code, 'VALIDATION_ERROR');
      assert.match(response.body.message, message, JSON.stringify(body));
    }
    const malformed = await server.request('POST', '/api/v1/organizations', { rawBody: '{"name":"x",', auth: null });
    assert.equal(malformed.status, 400);
  });

  it('with REGISTRATION_MODE=closed needs X-Admin-Key (403 without)', async () => {
    const closed = await startTestServer('orgsclosed', { registrationMode: 'closed' });
    try {
      const body = { name: 'Closed Co', slug: uniqueSlug('closed') };
      const refused = await closed.request('POST', '/api/v1/organizations', { body, auth: null });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'ACCESS_DENIED');
      const wrong = await closed.request('POST', '/api/v1/organizations', { body, auth: null, headers: { 'x-admin-key': 'wrong' } });
      assert.equal(wrong.status, 403);
      const allowed = await closed.request('POST', '/api/v1/organizations', { body, auth: null, headers: { 'x-admin-key': 'test-admin-key' } });
      assert.equal(allowed.status, 201);
      assert.deepEqual([allowed.body.organization.plan_tier, allowed.body.organization.unlimited], ['enterprise', true], 'the default plan of that server, unlimited');
    } finally {
      await closed.close();
    }
  });
});

describe('the caller\'s organization', () => {
  it('GET /organizations/{id} returns it; other and malformed ids are 404', async () => {
    const own = await server.request('GET', `/api/v1/organizations/${server.organizationId}`);
    assert.equal(own.status, 200);
    assert.deepEqual(Object.keys(own.body).sort(), ORGANIZATION_KEYS);
    const other = await server.createOrganization();
    assert.equal((await server.request('GET', `/api/v1/organizations/${other.organizationId}`)).status, 404);
    assert.equal((await server.request('GET', '/api/v1/organizations/not-a-uuid')).status, 404);
    assert.equal((await server.request('GET', '/api/v1/organizations/00000000-0000-4000-8000-000000000000')).status, 404);
  });

  it('PUT /organizations/{id} updates name, billing email and settings, keeping the webhook token', async () => {
    const created = await register({ name: 'Settings Co', slug: uniqueSlug('settings') });
    const key = created.body.api_key.key as string;
    const id = created.body.organization.id as string;
    const token = (await server.request('POST', '/api/v1/organizations/webhook-token/regenerate', { auth: key })).body.token;
    const updated = await server.request('PUT', `/api/v1/organizations/${id}`, {
      auth: key,
      body: { name: 'Renamed Co', billing_email: 'ops@renamed.test', settings: { CamelKey: { nested: [1, 2] }, webhook_token: 'attempted override' } },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.name, 'Renamed Co');
    assert.equal(updated.body.billing_email, 'ops@renamed.test');
    assert.deepEqual(updated.body.settings, { CamelKey: { nested: [1, 2] }, webhook_token: token });
    const cleared = await server.request('PUT', `/api/v1/organizations/${id}`, { auth: key, body: { billing_email: null } });
    assert.equal(cleared.body.billing_email, null);
    assert.equal(cleared.body.name, 'Renamed Co');
    const empty = await server.request('PUT', `/api/v1/organizations/${id}`, { auth: key, rawBody: '' });
    assert.equal(empty.status, 200, 'an empty body changes nothing');

    const invalid: [Record<string, unknown>, number, RegExp][] = [
      [{ name: 'no' }, 400, /name/],
      [{ name: 7 }, 400, /name/],
      [{ settings: 'text' }, 400, /settings/],
      [{ billing_email: 'nope' }, 400, /billing_email/],
      [{ settings: { big: 'x'.repeat(70 * 1024) } }, 413, /settings/],
    ];
    for (const [body, status, message] of invalid) {
      const response = await server.request('PUT', `/api/v1/organizations/${id}`, { auth: key, body });
      assert.equal(response.status, status, JSON.stringify(body).slice(0, 80));
      assert.match(response.body.message, message);
    }
    assert.equal((await server.request('PUT', `/api/v1/organizations/${server.organizationId}`, { auth: key, body: { name: 'Hijack' } })).status, 404);
  });

  it('GET /organizations/{id}/members lists one member per active key', async () => {
    const created = await register({ name: 'Members Co', slug: uniqueSlug('members'), billing_email: 'm@members.test' });
    const key = created.body.api_key.key as string;
    const id = created.body.organization.id as string;
    const limited = await server.request('POST', '/api/v1/api-keys', { auth: key, body: { name: 'worker key', queues: ['emails'] } });
    const revoked = await server.request('POST', '/api/v1/api-keys', { auth: key, body: { name: 'old key' } });
    await server.request('DELETE', `/api/v1/api-keys/${revoked.body.id}`, { auth: key });
    const members = await server.request('GET', `/api/v1/organizations/${id}/members`, { auth: key });
    assert.equal(members.status, 200);
    assert.equal(members.body.length, 2);
    const byName = Object.fromEntries(members.body.map((m: { name: string }) => [m.name, m]));
    assert.equal(byName['Initial Admin Key'].role, 'owner');
    assert.equal(byName['worker key'].role, 'member');
    assert.equal(byName['worker key'].id, limited.body.id);
    assert.equal(byName['worker key'].email, 'm@members.test');
    assert.deepEqual(Object.keys(byName['worker key']).sort(), ['email', 'id', 'invited_by', 'joined_at', 'name', 'role', 'user_id']);
    assert.equal((await server.request('GET', `/api/v1/organizations/${server.organizationId}/members`, { auth: key })).status, 404);
  });

  it('DELETE /organizations/{id} is refused (409) while jobs are active, then deletes everything (204)', async () => {
    const created = await register({ name: 'Doomed Co', slug: uniqueSlug('doomed') });
    const key = created.body.api_key.key as string;
    const id = created.body.organization.id as string;
    const job = await server.request('POST', '/api/v1/jobs', { auth: key, body: { queue_name: 'q', payload: {} } });
    assert.equal(job.status, 201);
    const refused = await server.request('DELETE', `/api/v1/organizations/${id}`, { auth: key });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.details.active_jobs, 1);
    await server.spool.db.query("UPDATE spool.jobs SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(organization_id, queue_name, 'cancelled'), completed_at = now() WHERE organization_id = $1", [id]);
    await server.spool.db.query("INSERT INTO spool.workers (organization_id, queue_name, hostname) VALUES ($1, 'q', 'h')", [id]);
    assert.equal((await server.request('DELETE', `/api/v1/organizations/${id}`, { auth: key })).body.details.live_workers, 1);
    await server.spool.db.query("UPDATE spool.workers SET status = 'offline' WHERE organization_id = $1", [id]);
    assert.equal((await server.request('DELETE', `/api/v1/organizations/${server.organizationId}`, { auth: key })).status, 404, "another organization's id");
    const deleted = await server.request('DELETE', `/api/v1/organizations/${id}`, { auth: key });
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    const rows = await server.spool.db.query('SELECT (SELECT count(*) FROM spool.jobs WHERE organization_id = $1) AS jobs, (SELECT count(*) FROM spool.job_history WHERE organization_id = $1) AS history', [id]);
    assert.deepEqual(rows.rows[0], { jobs: 0, history: 0 });
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: key })).status, 401);
  });
});

describe('slugs', () => {
  it('GET /organizations/check-slug tells valid, taken and free slugs apart', async () => {
    const slug = uniqueSlug('check');
    const free = await server.request('GET', `/api/v1/organizations/check-slug?slug=${slug}`);
    assert.equal(free.status, 200);
    assert.deepEqual(free.body, { available: true, valid: true, error: null, suggestion: null });
    await register({ name: 'Check Co', slug });
    const taken = await server.request('GET', `/api/v1/organizations/check-slug?slug=${slug}`);
    assert.equal(taken.body.available, false);
    assert.equal(taken.body.valid, true);
    assert.match(taken.body.suggestion, new RegExp(`^${slug}-`));
    const reserved = await server.request('GET', '/api/v1/organizations/check-slug?slug=admin');
    assert.equal(reserved.body.valid, false);
    assert.match(reserved.body.error, /reserved/);
    const invalid = await server.request('GET', '/api/v1/organizations/check-slug?slug=Bad%20Slug');
    assert.equal(invalid.body.valid, false);
    assert.match(invalid.body.suggestion, /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/);
    const missing = await server.request('GET', '/api/v1/organizations/check-slug');
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /slug/);
  });

  it('POST /organizations/generate-slug returns a valid, unused slug', async () => {
    const first = await server.request('POST', '/api/v1/organizations/generate-slug', { body: { name: 'Ünïcode & Sons, Ltd.' } });
    assert.equal(first.status, 200);
    assert.equal(first.body.slug, 'unicode-sons-ltd');
    await register({ name: 'Unicode Sons', slug: first.body.slug });
    const second = await server.request('POST', '/api/v1/organizations/generate-slug', { body: { name: 'Ünïcode & Sons, Ltd.' } });
    assert.notEqual(second.body.slug, first.body.slug);
    assert.match(second.body.slug, /^unicode-sons-ltd-[a-z0-9]+$/);
    for (const name of ['42', 'a', '!!!', 'Admin']) {
      const generated = await server.request('POST', '/api/v1/organizations/generate-slug', { body: { name } });
      assert.equal(generated.status, 200);
      assert.equal((await server.request('GET', `/api/v1/organizations/check-slug?slug=${generated.body.slug}`)).body.available, true, name);
    }
    assert.equal((await server.request('POST', '/api/v1/organizations/generate-slug', { body: { name: '' } })).status, 400);
    assert.equal((await server.request('POST', '/api/v1/organizations/generate-slug', { body: {} })).status, 400);
  });
});

describe('webhook token', () => {
  it('is generated at registration as whk_ + 32 base64url characters, regenerated, and cleared', async () => {
    const created = await register({ name: 'Token Co', slug: uniqueSlug('token') });
    const key = created.body.api_key.key as string;
    const id = created.body.organization.id as string;
    const initial = await server.request('GET', '/api/v1/organizations/webhook-token', { auth: key });
    assert.equal(initial.status, 200);
    assert.deepEqual(Object.keys(initial.body).sort(), ['token', 'webhook_token', 'webhook_url']);
    assert.match(initial.body.token, /^whk_[A-Za-z0-9_-]{32}$/);
    assert.equal(created.body.organization.settings.webhook_token, initial.body.token);
    assert.equal(initial.body.webhook_url, `${server.url}/api/v1/webhooks/${id}/custom`);
    const regenerated = await server.request('POST', '/api/v1/organizations/webhook-token/regenerate', { auth: key, rawBody: '' });
    assert.equal(regenerated.status, 200);
    assert.match(regenerated.body.token, /^whk_[A-Za-z0-9_-]{32}$/);
    assert.equal(regenerated.body.webhook_token, regenerated.body.token);
    assert.notEqual(regenerated.body.token, initial.body.token);
    const again = await server.request('POST', '/api/v1/organizations/webhook-token/regenerate', { auth: key });
    assert.notEqual(again.body.token, regenerated.body.token);
    assert.equal((await server.request('GET', '/api/v1/organizations/webhook-token', { auth: key })).body.token, again.body.token);
    const settings = await server.request('GET', `/api/v1/organizations/${id}`, { auth: key });
    assert.equal(settings.body.settings.webhook_token, again.body.token);
    const cleared = await server.request('POST', '/api/v1/organizations/webhook-token/clear', { auth: key, body: { confirm: true } });
    assert.equal(cleared.status, 204);
    assert.equal((await server.request('GET', '/api/v1/organizations/webhook-token', { auth: key })).body.token, null);
    assert.equal((await server.request('POST', '/api/v1/organizations/webhook-token/clear', { auth: key, rawBody: '' })).status, 204);
    assert.equal((await server.request('POST', '/api/v1/organizations/webhook-token/clear', { auth: key, body: { confirm: 'yes' } })).status, 400);
  });

  it('is generated for organizations the admin API creates, each its own', async () => {
    const tokens = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const created = await server.request('POST', '/api/v1/admin/organizations', { auth: null, headers: { 'x-admin-key': 'test-admin-key' }, body: { name: 'Admin Token Co', slug: uniqueSlug('admintoken') } });
      assert.equal(created.status, 201, created.text);
      const token = (await server.request('GET', '/api/v1/organizations/webhook-token', { auth: created.body.api_key.key })).body.token;
      assert.match(token, /^whk_[A-Za-z0-9_-]{32}$/);
      assert.equal(created.body.organization.settings.webhook_token, token);
      tokens.add(token);
    }
    assert.equal(tokens.size, 2);
  });
});
