import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('jobsbasic');
});
after(async () => server.close());

describe('POST /api/v1/jobs and GET /api/v1/jobs/{id}', () => {
  it('creates a job (201) and reads it back with every contract field', async () => {
    const created = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'emails', payload: { to: 'a@example.com', Nested: { keepCase: 1 } }, priority: 5 } });
    assert.equal(created.status, 201);
    assert.equal(created.body.created, true);
    const job = await server.request('GET', `/api/v1/jobs/${created.body.id}`);
    assert.equal(job.status, 200);
    assert.equal(job.body.status, 'pending');
    assert.deepEqual(job.body.payload, { to: 'a@example.com', Nested: { keepCase: 1 } });
    for (const key of ['result', 'last_error', 'scheduled_at', 'started_at', 'completed_at', 'expires_at', 'tags', 'parent_job_id', 'completion_webhook', 'assigned_worker_id', 'lease_id', 'lease_expires_at', 'idempotency_key', 'workflow_id', 'dependency_mode', 'dependencies_met']) {
      assert.ok(key in job.body, `${key} is present`);
    }
  });

  it('answers an idempotent repeat with 200, created:false and the original id', async () => {
    const first = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'q', payload: 1, idempotency_key: 'k1' } });
    const second = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'q', payload: 2, idempotency_key: 'k1' } });
    assert.equal(first.status, 201);
    assert.equal(second.status, 200);
    assert.deepEqual(second.body, { id: first.body.id, created: false });
  });

  it('refuses bad input with a 400 naming the field', async () => {
    const empty = await server.request('POST', '/api/v1/jobs', { body: { queue_name: '', payload: {} } });
    assert.equal(empty.status, 400);
    assert.equal(empty.body.code, 'VALIDATION_ERROR');
    assert.match(empty.body.message, /queue_name/);
    const wrongType = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'q', payload: {}, priority: '5' } });
    assert.equal(wrongType.status, 400);
    assert.match(wrongType.body.message, /priority/);
    const missing = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'q' } });
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /payload/);
    const malformed = await server.request('POST', '/api/v1/jobs', { rawBody: '{"queue_name":' });
    assert.equal(malformed.status, 400);
  });

  it('answers unknown and malformed ids with 404, and unauthenticated calls with 401', async () => {
    assert.equal((await server.request('GET', '/api/v1/jobs/not-a-uuid')).status, 404);
    assert.equal((await server.request('GET', '/api/v1/jobs/00000000-0000-4000-8000-000000000000')).status, 404);
    assert.equal((await server.request('GET', '/api/v1/jobs/x', { auth: null })).status, 401);
    assert.equal((await server.request('GET', '/api/v1/jobs/x', { auth: 'sk_test_nope' })).status, 401);
    assert.equal((await server.request('GET', '/api/v1/no-such-route', { auth: null })).status, 404);
  });

  it("hides another organization's job (404)", async () => {
    const other = await server.createOrganization();
    const created = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'q', payload: {} } });
    assert.equal((await server.request('GET', `/api/v1/jobs/${created.body.id}`, { auth: other.apiKey })).status, 404);
  });
});
