import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { FakeSpoolServer } from '../../../test-support/fake-spool-server.js';
import {
  AuthenticationError,
  ConflictError,
  LeaseExpiredError,
  NotFoundError,
  RateLimitError,
  ServerError,
  SpoolApiError,
  SpoolClient,
  SpoolNetworkError,
  SpoolTimeoutError,
  ValidationError,
} from '../src/index.js';

let server: FakeSpoolServer;
let client: SpoolClient;

before(async () => {
  server = await new FakeSpoolServer().start();
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey, retry: { baseDelayMs: 5, maxDelayMs: 20 } });
});

after(() => server.stop());

test('requests go out snake_case with blobs verbatim; answers come back camelCase', async () => {
  const created = await client.jobs.create({ queueName: 'emails', payload: { toAddress: 'a@example.com', nested_key: { keepMe: 1 } }, tags: { campaignId: 7 }, maxRetries: 5 });
  assert.equal(created.created, true);
  const [request] = server.calls('/api/v1/jobs', 'POST');
  assert.deepEqual(request!.body, { queue_name: 'emails', payload: { toAddress: 'a@example.com', nested_key: { keepMe: 1 } }, tags: { campaignId: 7 }, max_retries: 5 });
  assert.equal(request!.headers['content-type'], 'application/json');
  assert.equal(request!.headers.authorization, `Bearer ${server.apiKey}`);

  const job = await client.jobs.get(created.id);
  assert.equal(job.queueName, 'emails');
  assert.equal(job.maxRetries, 5);
  assert.deepEqual(job.payload, { toAddress: 'a@example.com', nested_key: { keepMe: 1 } });
  assert.deepEqual(job.tags, { campaignId: 7 });
  assert.equal('queue_name' in job, false);

  const list = await client.jobs.list({ queueName: 'emails', limit: 10 });
  const [listCall] = server.calls('/api/v1/jobs', 'GET');
  assert.equal(listCall!.query.get('queue_name'), 'emails');
  assert.equal(listCall!.query.get('limit'), '10');
  assert.equal(list[0]!.id, created.id);

  const dashboard = await client.dashboard.get();
  assert.equal(typeof dashboard.jobs.completed24h, 'number');
  assert.equal(typeof dashboard.recentActivity.jobsCreated1h, 'number');
});

test('ids are path-encoded and any string reaches the server as a 404', async () => {
  await assert.rejects(client.jobs.get('not/a uuid?'), (err: unknown) => {
    assert.ok(err instanceof NotFoundError);
    return true;
  });
  assert.equal(server.requests.at(-1)!.path, '/api/v1/jobs/not%2Fa%20uuid%3F');
});

test('errors carry status, code, request id and verbatim details; the class follows the status', async () => {
  server.inject('POST', '/api/v1/jobs', { status: 400, body: { code: 'VALIDATION_ERROR', message: 'queue_name is required', details: { field_name: 'queue_name' } }, headers: { 'x-request-id': 'req-1' } });
  const err = await client.jobs.create({ queueName: '', payload: {} }).catch((e: unknown) => e);
  assert.ok(err instanceof ValidationError);
  assert.ok(err instanceof SpoolApiError);
  assert.equal(err.status, 400);
  assert.equal(err.code, 'VALIDATION_ERROR');
  assert.equal(err.message, 'queue_name is required');
  assert.equal(err.requestId, 'req-1');
  assert.deepEqual(err.details, { field_name: 'queue_name' });

  const unauthorised = new SpoolClient({ baseUrl: server.url, apiKey: 'sk_test_wrong' });
  const authErr = await unauthorised.jobs.stats().catch((e: unknown) => e);
  assert.ok(authErr instanceof AuthenticationError);
  assert.equal(authErr.requestId, 'req-401');

  server.inject('POST', '/api/v1/jobs/x/complete', { status: 409, body: { code: 'LEASE_EXPIRED', message: 'Lease expired' } });
  const leaseErr = await client.jobs.complete('x', { workerId: 'w' }).catch((e: unknown) => e);
  assert.ok(leaseErr instanceof LeaseExpiredError);
  assert.ok(leaseErr instanceof ConflictError);

  server.inject('GET', '/api/v1/jobs/stats', { status: 403, body: { error: 'limit_exceeded', code: 'LIMIT_EXCEEDED', upgrade_to: 'pro' } });
  const limitErr = (await client.jobs.stats().catch((e: unknown) => e)) as SpoolApiError;
  assert.equal(limitErr.status, 403);
  assert.equal(limitErr.message, 'limit_exceeded');
  assert.deepEqual(limitErr.body, { error: 'limit_exceeded', code: 'LIMIT_EXCEEDED', upgradeTo: 'pro' });

  server.inject('GET', '/api/v1/jobs/stats', { status: 418, body: 'I am a teapot' });
  const plain = (await client.jobs.stats().catch((e: unknown) => e)) as SpoolApiError;
  assert.equal(plain.status, 418);
  assert.equal(plain.message, 'I am a teapot');
  assert.equal(plain.code, 'HTTP_418');
});

test('idempotent calls are retried after 5xx and dropped connections', async () => {
  server.inject('GET', '/api/v1/jobs/stats', { status: 500, body: { code: 'INTERNAL_ERROR', message: 'boom' } }, { status: 503, body: 'busy' });
  const stats = await client.jobs.stats();
  assert.equal(typeof stats.total, 'number');
  assert.equal(server.calls('/api/v1/jobs/stats').length >= 3, true);

  const before = server.calls('/api/v1/queues').length;
  server.inject('GET', '/api/v1/queues', { status: 0, drop: true });
  assert.deepEqual(await client.queues.list(), []);
  assert.equal(server.calls('/api/v1/queues').length - before, 2);
});

test('a POST is not retried on 5xx, but an idempotency key makes it safe', async () => {
  const calls = () => server.calls('/api/v1/jobs', 'POST').length;
  let start = calls();
  server.inject('POST', '/api/v1/jobs', { status: 500, body: { code: 'INTERNAL_ERROR', message: 'boom' } });
  await assert.rejects(client.jobs.create({ queueName: 'q', payload: {} }), ServerError);
  assert.equal(calls() - start, 1);

  start = calls();
  server.inject('POST', '/api/v1/jobs', { status: 502, body: 'bad gateway' });
  const created = await client.jobs.create({ queueName: 'q', payload: {}, idempotencyKey: 'k-1' });
  assert.equal(created.created, true);
  assert.equal(calls() - start, 2);
});

test('429 is retried for any method after Retry-After', async () => {
  const start = server.calls('/api/v1/jobs', 'POST').length;
  server.inject('POST', '/api/v1/jobs', { status: 429, body: { code: 'RATE_LIMIT_EXCEEDED', message: 'slow down' }, headers: { 'retry-after': '1' } });
  const began = Date.now();
  const created = await client.jobs.create({ queueName: 'q', payload: { n: 1 } });
  assert.equal(created.created, true);
  assert.ok(Date.now() - began >= 950, 'waited for Retry-After');
  assert.equal(server.calls('/api/v1/jobs', 'POST').length - start, 2);

  const noRetry = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey, retry: false });
  server.inject('GET', '/api/v1/jobs/stats', { status: 429, body: { code: 'RATE_LIMIT_EXCEEDED', message: 'slow down' }, headers: { 'retry-after': '3' } });
  const err = await noRetry.jobs.stats().catch((e: unknown) => e);
  assert.ok(err instanceof RateLimitError);
  assert.equal(err.retryAfterMs, 3000);
});

test('unreachable server: network error with the code, retried until the budget is spent', async () => {
  const probe = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => probe.on('listening', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const dead = new SpoolClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'sk_test_x', retry: { maxRetries: 2, baseDelayMs: 5 } });
  const err = await dead.jobs.create({ queueName: 'q', payload: {} }).catch((e: unknown) => e);
  assert.ok(err instanceof SpoolNetworkError);
  assert.equal(err.code, 'ECONNREFUSED');
});

test('timeouts and caller aborts', async () => {
  const slow = createServer((_req, res) => setTimeout(() => res.end('{}'), 2000));
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
  try {
    const hasty = new SpoolClient({ baseUrl: url, timeoutMs: 100, retry: false });
    const err = await hasty.jobs.stats().catch((e: unknown) => e);
    assert.ok(err instanceof SpoolTimeoutError);
    assert.equal(err.timeoutMs, 100);

    const patient = new SpoolClient({ baseUrl: url, retry: false });
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(patient.jobs.stats({ signal: controller.signal }), (e: unknown) => e === reason);
  } finally {
    slow.closeAllConnections();
    slow.close();
  }
});

test('JSON calls share one keep-alive connection, and a UTF-8 body survives chunking', async () => {
  let connections = 0;
  const big = 'ü'.repeat(100_000); // two bytes each: split across chunks mid-character unless decoded as a stream
  const raw = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'j1', queue_name: 'q', status: 'pending', payload: { text: big } }));
    });
  });
  raw.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  try {
    const direct = new SpoolClient({ baseUrl: `http://127.0.0.1:${(raw.address() as AddressInfo).port}`, apiKey: 'sk_test' });
    for (let i = 0; i < 5; i++) {
      const job = await direct.jobs.get('j1');
      assert.equal((job.payload as { text: string }).text, big);
    }
    assert.equal(connections, 1);
  } finally {
    raw.closeAllConnections();
    await new Promise((resolve) => raw.close(resolve));
  }
});

test('every resource maps to the contract path', async () => {
  const seen: string[] = [];
  const echo = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"jobs":[],"results":[]}');
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  const c = new SpoolClient({ baseUrl: `http://127.0.0.1:${(echo.address() as AddressInfo).port}/`, adminKey: 'adm', retry: false });
  try {
    await c.jobs.statuses(['a', 'b']);
    await c.jobs.setPriority('j', 5);
    await c.dlq.purge({ confirm: true, queueName: 'q' });
    await c.queues.updateConfig('q', { maxRetries: 2 });
    await c.workers.deregister('w');
    await c.schedules.history('s', { limit: 5 });
    await c.workflows.jobStatuses('wf');
    await c.webhooks.retryDelivery('h', 'd');
    await c.apiKeys.revoke('k');
    await c.organizations.checkSlug('my-org');
    await c.auth.validate('t');
    await c.billing.status();
    await c.health.get();
    await c.admin.deleteOrganization('o', { hardDelete: true });
    await c.jobs.claim({ queueName: 'q', workerId: 'w', waitMs: 0 });
  } finally {
    echo.close();
  }
  assert.deepEqual(seen, [
    'GET /api/v1/jobs/status?ids=a%2Cb',
    'PUT /api/v1/jobs/j/priority',
    'POST /api/v1/jobs/dlq/purge',
    'PUT /api/v1/queues/q/config',
    'POST /api/v1/workers/w/deregister',
    'GET /api/v1/schedules/s/history?limit=5',
    'GET /api/v1/workflows/wf/jobs/status',
    'POST /api/v1/outgoing-webhooks/h/retry/d',
    'DELETE /api/v1/api-keys/k',
    'GET /api/v1/organizations/check-slug?slug=my-org',
    'POST /api/v1/auth/validate',
    'GET /api/v1/billing/status',
    'GET /health',
    'DELETE /api/v1/admin/organizations/o?hard_delete=true',
    'POST /api/v1/jobs/claim',
  ]);
});
