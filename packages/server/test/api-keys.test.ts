import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('apikeys');
});
after(async () => server.close());

const SUMMARY_KEYS = ['created_at', 'expires_at', 'id', 'is_active', 'last_used', 'name', 'queues', 'rate_limit', 'role'];

describe('API keys', () => {
  it('POST creates a key that works at once and is shown only at creation', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = await server.request('POST', '/api/v1/api-keys', { body: { name: 'ci (deploy) key_1.0', queues: ['emails', 'reports.*'], rate_limit: 50, expires_at: expiresAt } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(Object.keys(created.body).sort(), ['created_at', 'expires_at', 'id', 'key', 'name', 'queues', 'role']);
    assert.match(created.body.key, /^sk_test_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.body.expires_at, expiresAt);
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: created.body.key })).status, 200);

    const one = await server.request('GET', `/api/v1/api-keys/${created.body.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(Object.keys(one.body).sort(), SUMMARY_KEYS);
    assert.deepEqual(one.body.queues, ['emails', 'reports.*']);
    assert.equal(one.body.rate_limit, 50);
    assert.equal(one.body.is_active, true);
    assert.ok(!JSON.stringify(one.body).includes(created.body.key), 'the key is never shown again');

    const stored = await server.spool.db.query<{ key_hash: Buffer }>('SELECT key_hash FROM spool.api_keys WHERE id = $1', [created.body.id]);
    assert.equal(stored.rows[0]!.key_hash.length, 32, 'only a SHA-256 is stored');
  });

  it('GET lists every key, revoked ones included, newest first', async () => {
    const a = await server.request('POST', '/api/v1/api-keys', { body: { name: 'list a' } });
    const b = await server.request('POST', '/api/v1/api-keys', { body: { name: 'list b' } });
    await server.request('DELETE', `/api/v1/api-keys/${a.body.id}`);
    const list = await server.request('GET', '/api/v1/api-keys');
    assert.equal(list.status, 200);
    const ids = list.body.map((k: { id: string }) => k.id);
    assert.ok(ids.indexOf(b.body.id) < ids.indexOf(a.body.id));
    assert.equal(list.body.find((k: { id: string }) => k.id === a.body.id).is_active, false);
    for (const key of list.body) assert.deepEqual(Object.keys(key).sort(), SUMMARY_KEYS);
  });

  it('PUT changes name, queues, rate limit and the active flag', async () => {
    const created = await server.request('POST', '/api/v1/api-keys', { body: { name: 'to change', rate_limit: 10 } });
    const updated = await server.request('PUT', `/api/v1/api-keys/${created.body.id}`, { body: { name: 'changed', queues: ['only-this'] } });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.name, 'changed');
    assert.deepEqual(updated.body.queues, ['only-this']);
    assert.equal(updated.body.rate_limit, 10, 'absent fields are kept');
    const cleared = await server.request('PUT', `/api/v1/api-keys/${created.body.id}`, { body: { rate_limit: null, is_active: false } });
    assert.equal(cleared.body.rate_limit, null);
    assert.equal(cleared.body.is_active, false);
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: created.body.key })).status, 401);
    assert.equal((await server.request('PUT', `/api/v1/api-keys/${created.body.id}`, { rawBody: '' })).status, 200);
  });

  it('DELETE revokes (204); the key fails on its next request; unknown ids are 404', async () => {
    const created = await server.request('POST', '/api/v1/api-keys', { body: { name: 'short lived' } });
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: created.body.key })).status, 200);
    const revoked = await server.request('DELETE', `/api/v1/api-keys/${created.body.id}`);
    assert.equal(revoked.status, 204);
    assert.equal(revoked.text, '');
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: created.body.key })).status, 401);
    assert.equal((await server.request('GET', `/api/v1/api-keys/${created.body.id}`)).body.is_active, false);
    for (const id of ['nope', '00000000-0000-4000-8000-000000000000']) {
      assert.equal((await server.request('GET', `/api/v1/api-keys/${id}`)).status, 404);
      assert.equal((await server.request('PUT', `/api/v1/api-keys/${id}`, { body: { name: 'x' } })).status, 404);
      assert.equal((await server.request('DELETE', `/api/v1/api-keys/${id}`)).status, 404);
    }
  });

  it('a revoked key stays revoked: PUT is_active true is 409 CONFLICT and changes nothing', async () => {
    const created = await server.request('POST', '/api/v1/api-keys', { body: { name: 'leaked' } });
    assert.equal((await server.request('DELETE', `/api/v1/api-keys/${created.body.id}`)).status, 204);
    const reactivate = await server.request('PUT', `/api/v1/api-keys/${created.body.id}`, { body: { is_active: true, name: 'renamed' } });
    assert.equal(reactivate.status, 409, reactivate.text);
    assert.equal(reactivate.body.code, 'CONFLICT');
    assert.equal(reactivate.body.message, 'This API key was revoked and cannot be reactivated; create a new key');
    assert.ok('details' in reactivate.body);
    const after = await server.request('GET', `/api/v1/api-keys/${created.body.id}`);
    assert.equal(after.body.is_active, false);
    assert.equal(after.body.name, 'leaked', 'a refused update changes nothing');
    assert.equal((await server.request('GET', '/api/v1/dashboard', { auth: created.body.key })).status, 401);

    // PUT is_active false is the same revoke; other fields of a revoked key may still change.
    const paused = await server.request('POST', '/api/v1/api-keys', { body: { name: 'switched off' } });
    assert.equal((await server.request('PUT', `/api/v1/api-keys/${paused.body.id}`, { body: { is_active: false } })).status, 200);
    assert.equal((await server.request('PUT', `/api/v1/api-keys/${paused.body.id}`, { body: { is_active: true } })).status, 409);
    const renamed = await server.request('PUT', `/api/v1/api-keys/${paused.body.id}`, { body: { name: 'old key', is_active: false } });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'old key');
    assert.equal((await server.request('PUT', `/api/v1/api-keys/${server.organizationId}`, { body: { is_active: true } })).status, 404, 'an unknown key is still 404');
    const active = await server.request('POST', '/api/v1/api-keys', { body: { name: 'still fine' } });
    assert.equal((await server.request('PUT', `/api/v1/api-keys/${active.body.id}`, { body: { is_active: true } })).status, 200, 'is_active true on an active key is a no-op');

    // Outside the API too (admin tooling, a hand-written UPDATE): the database refuses.
    await assert.rejects(server.spool.db.query('UPDATE spool.api_keys SET is_active = true WHERE id = $1', [created.body.id]), /cannot be reactivated/);
  });

  it('validates bodies with 400 naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /name/],
      [{ name: '' }, /name/],
      [{ name: 'x'.repeat(101) }, /name/],
      [{ name: 'bad/name' }, /name/],
      [{ name: 5 }, /name/],
      [{ name: 'ok', queues: 'emails' }, /queues/],
      [{ name: 'ok', queues: ['bad queue'] }, /queues/],
      [{ name: 'ok', queues: Array.from({ length: 51 }, (_, i) => `q${i}`) }, /queues/],
      [{ name: 'ok', rate_limit: 0 }, /rate_limit/],
      [{ name: 'ok', rate_limit: 10_001 }, /rate_limit/],
      [{ name: 'ok', rate_limit: '5' }, /rate_limit/],
      [{ name: 'ok', expires_at: 'tomorrow' }, /expires_at/],
      [{ name: 'ok', expires_at: new Date(Date.now() - 1000).toISOString() }, /expires_at/],
    ];
    for (const [body, message] of cases) {
      const response = await server.request('POST', '/api/v1/api-keys', { body });
      assert.equal(response.status, 400, JSON.stringify(body).slice(0, 60));
      assert.match(response.body.message, message, JSON.stringify(body).slice(0, 60));
    }
    const created = await server.request('POST', '/api/v1/api-keys', { body: { name: 'valid' } });
    const badPut = await server.request('PUT', `/api/v1/api-keys/${created.body.id}`, { body: { is_active: 'no' } });
    assert.equal(badPut.status, 400);
    assert.match(badPut.body.message, /is_active/);
  });

  it('a key limited to some queues cannot mint, change or list keys (403: organization-level)', async () => {
    const limited = await server.request('POST', '/api/v1/api-keys', { body: { name: 'limited', queues: ['emails'] } });
    const mint = await server.request('POST', '/api/v1/api-keys', { auth: limited.body.key, body: { name: 'escalate', queues: ['*'] } });
    assert.equal(mint.status, 403);
    assert.equal((await server.request('PUT', `/api/v1/api-keys/${limited.body.id}`, { auth: limited.body.key, body: { queues: ['*'] } })).status, 403);
    assert.equal((await server.request('GET', '/api/v1/api-keys', { auth: limited.body.key })).status, 403);
  });
});
