/**
 * Queue-scoped keys and key roles, checked from the server's route table (so
 * a route added later is covered without editing this file) and over every
 * gRPC method.
 *
 * The organization owns objects in a queue its restricted key may not use:
 * jobs (pending, processing with a lease, dead-lettered), a schedule, a
 * workflow, a worker and a queue config, plus organization-level objects.
 * The restricted key calls every route with those ids and that queue name in
 * every slot. It must learn nothing of them (no payload, no id it did not
 * send, no other queue's name), nothing may be 5xx, and the organization's
 * own view must be unchanged afterwards: the key changed nothing it may not.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { OPERATIONS } from '@spool/server';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient, toStruct, type GrpcTestClient } from '../../../test-support/grpc.js';
import { openSse } from '../../../test-support/sse.js';
import { loadJobsAsIs } from '../../../test-support/job-fixtures.js';
import { callRoute, isApiRoute, requestFor, seriesTotals, slotsOf, type Route, type RouteCall } from '../../../test-support/route-table.js';

const ALLOWED = 'scope-allowed';
const FORBIDDEN = 'scope-forbidden';
const MARKER = `scope-secret-${randomBytes(4).toString('hex')}`;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/g;
const VOLATILE_KEY = /uptime|_at$|_ms$|_secs?$|_seconds$|age|last_used|heartbeat|timestamp|request_id|token|webhook_url/;
/** Routes that authenticate otherwise (admin key, path-addressed ingestion, token exchange). */
const NOT_KEY_ROUTES = [/^\/api\/v1\/admin\//, /^\/api\/v1\/webhooks\/:org_id\//, /^\/api\/v1\/auth\/(login|refresh|validate|email|check-email|me)/, /^\/api\/v1\/organizations$/];

let server: TestServer;
let routes: Route[];
let restricted: string;
let grpc: GrpcTestClient;
const forbiddenIds = new Set<string>();
let processing: { id: string; leaseId: string; workerId: string };
let workerId: string;

type Call = RouteCall;
const call = (method: string, path: string, apiKey: string, body?: unknown) => callRoute(server.url, method, path, apiKey, body);
const build = requestFor;

/** Nothing of the forbidden queue in an answer, except what the caller itself sent (`sent`: its path and body). */
function assertNothingLeaks(result: Call, label: string, sent: string): void {
  assert.ok(result.status < 500, `${label} answered ${result.status}: ${result.text.slice(0, 200)}`);
  assert.ok(!result.text.includes(MARKER), `${label} leaks a payload of ${FORBIDDEN}: ${result.text.slice(0, 300)}`);
  for (const id of forbiddenIds) {
    if (sent.includes(id)) continue;
    assert.ok(!result.text.toLowerCase().includes(id), `${label} leaks ${id}: ${result.text.slice(0, 300)}`);
  }
  if (!sent.includes(FORBIDDEN)) assert.ok(!result.text.includes(FORBIDDEN), `${label} names ${FORBIDDEN}: ${result.text.slice(0, 300)}`);
}

function normalize(result: Call): string {
  const mask = (value: unknown, key = ''): unknown => {
    if (VOLATILE_KEY.test(key)) return '<volatile>';
    if (typeof value === 'string') return value.replace(ISO, '<ts>');
    if (key === 'points' && Array.isArray(value)) return mask(seriesTotals(value, VOLATILE_KEY));
    if (Array.isArray(value)) return value.map((v) => mask(v));
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mask(v, k)]));
    return value;
  };
  return JSON.stringify({ status: result.status, body: result.text.startsWith('data:') || result.text.startsWith(':') ? '<stream>' : mask(result.body) });
}

/** The organization's own view (its unrestricted key) of everything addressed by the forbidden ids and queue. */
async function snapshot(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const route of routes.filter((r) => r.method === 'GET' && !NOT_KEY_ROUTES.some((re) => re.test(r.url)) && !/events/.test(r.url))) {
    const kinds = [...slotsOf(route)];
    const values = kinds.includes('uuid') ? [...forbiddenIds] : [randomUUID()];
    for (const id of values) {
      const { path } = build(route, { uuid: id, name: FORBIDDEN });
      out.set(path, normalize(await call('GET', path, server.apiKey)));
    }
  }
  return out;
}

before(async () => {
  server = await startTestServer('scope', { publicRateLimitPerMinute: 0 });
  routes = server.spool.routes.filter(isApiRoute);
  const key = await server.request('POST', '/api/v1/api-keys', { body: { name: 'restricted', queues: [ALLOWED] } });
  assert.equal(key.status, 201);
  restricted = key.body.key;
  grpc = grpcClient(`127.0.0.1:${server.grpcPort}`, restricted);

  // The forbidden queue's objects, made with the organization's unrestricted key.
  const made = async (method: string, path: string, body?: unknown) => {
    const result = await server.request(method, path, { body });
    assert.ok(result.status < 300, `${method} ${path}: ${result.status} ${result.text}`);
    return result.body;
  };
  await made('PUT', `/api/v1/queues/${FORBIDDEN}/config`, { max_retries: 2 });
  await made('POST', '/api/v1/jobs', { queue_name: FORBIDDEN, payload: { secret: MARKER } });
  await made('POST', '/api/v1/jobs', { queue_name: FORBIDDEN, payload: { secret: MARKER } });
  workerId = (await made('POST', '/api/v1/workers/register', { queue_name: FORBIDDEN, hostname: 'forbidden-host' })).id;
  const [claimed] = (await made('POST', '/api/v1/jobs/claim', { queue_name: FORBIDDEN, worker_id: workerId, limit: 1, lease_duration_secs: 3600 })).jobs;
  processing = { id: claimed.id, leaseId: claimed.lease_id, workerId };
  await made('POST', '/api/v1/schedules', { name: 'forbidden schedule', cron_expression: '0 0 1 1 *', queue_name: FORBIDDEN, payload_template: { secret: MARKER }, is_active: false });
  await made('POST', '/api/v1/workflows', { name: 'forbidden workflow', jobs: [{ key: 'a', queue_name: FORBIDDEN, payload: { secret: MARKER } }, { key: 'b', queue_name: FORBIDDEN, payload: {}, depends_on: ['a'] }] });
  await made('POST', '/api/v1/outgoing-webhooks', { name: 'org hook', url: 'http://localhost:9/hook', events: ['job.completed'] });
  const db = server.spool.db;
  await loadJobsAsIs(db, (c) => c.query(
    `INSERT INTO spool.jobs (organization_id, queue_name, status, payload, completed_at, retry_count, last_error) VALUES ($1, $2, 'deadletter', $3, now(), 3, $4)`,
    [server.organizationId, FORBIDDEN, JSON.stringify({ secret: MARKER }), MARKER],
  ));
  // Nothing may expire or go stale while the matrix runs.
  await db.query("UPDATE spool.workers SET last_heartbeat = now() + interval '1 hour' WHERE organization_id = $1", [server.organizationId]);
  for (const sql of [
    'SELECT id::text FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2',
    'SELECT id::text FROM spool.schedules WHERE organization_id = $1 AND queue_name = $2',
    'SELECT id::text FROM spool.workers WHERE organization_id = $1 AND queue_name = $2',
    'SELECT DISTINCT workflow_id::text AS id FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 AND workflow_id IS NOT NULL',
  ]) for (const row of (await db.query<{ id: string }>(sql, [server.organizationId, FORBIDDEN])).rows) forbiddenIds.add(row.id);
  assert.ok(forbiddenIds.size >= 7, `fixtures: ${forbiddenIds.size} ids`);
});
after(async () => {
  grpc?.close();
  await server?.close();
});

describe('a queue-scoped key reaches only its queues', () => {
  it('every route: nothing of another queue is read, named or changed (from the route table)', async () => {
    const before = await snapshot();
    let probes = 0;
    // Organization-level ids (the organization, its keys, its webhooks) are probed too: org routes must refuse.
    const orgIds = (await server.spool.db.query<{ id: string }>(
      'SELECT id::text FROM spool.api_keys WHERE organization_id = $1 UNION ALL SELECT id::text FROM spool.outgoing_webhooks WHERE organization_id = $1 UNION ALL SELECT $1::text',
      [server.organizationId],
    )).rows.map((r) => r.id);
    for (const route of routes.filter((r) => !NOT_KEY_ROUTES.some((re) => re.test(r.url)))) {
      const kinds = [...slotsOf(route)];
      const label = `${route.method} ${route.url}`;
      const ids = kinds.includes('uuid') ? [...forbiddenIds, ...orgIds] : [randomUUID()];
      for (const id of ids) {
        const { path, body } = build(route, { uuid: id, name: FORBIDDEN });
        const result = await call(route.method, path, restricted, body);
        assertNothingLeaks(result, `${label} with ${id}`, path + JSON.stringify(body ?? null));
        probes += 1;
      }
    }
    assert.ok(probes > 150, `matrix ran ${probes} probes`);
    const afterwards = await snapshot();
    for (const [path, view] of before) assert.equal(afterwards.get(path), view, `the restricted key changed ${path}`);
  });

  it('answers 404 for objects addressed by id, 403 when naming the queue, 403 for organization-level operations', async () => {
    for (const path of [`/api/v1/jobs/${processing.id}`, `/api/v1/jobs/${processing.id}/history`, `/api/v1/workers/${workerId}`]) {
      const result = await call('GET', path, restricted);
      assert.equal(result.status, 404, path);
      assert.equal(result.body.code, 'NOT_FOUND');
    }
    const complete = await call('POST', `/api/v1/jobs/${processing.id}/complete`, restricted, { worker_id: processing.workerId, lease_id: processing.leaseId, result: { forged: true } });
    assert.equal(complete.status, 404);
    for (const [method, path, body] of [
      ['POST', '/api/v1/jobs', { queue_name: FORBIDDEN, payload: {} }],
      ['POST', '/api/v1/jobs/claim', { queue_name: FORBIDDEN, worker_id: 'w' }],
      ['GET', `/api/v1/queues/${FORBIDDEN}/stats`, undefined],
      ['POST', `/api/v1/queues/${FORBIDDEN}/pause`, {}],
      ['POST', '/api/v1/jobs/dlq/purge', { queue_name: FORBIDDEN, confirm: true }],
    ] as const) {
      const result = await call(method, path, restricted, body);
      assert.equal(result.status, 403, `${method} ${path}: ${result.text}`);
      assert.equal(result.body.code, 'ACCESS_DENIED');
    }
    for (const [method, path] of [
      ['GET', '/api/v1/organizations/webhook-token'],
      ['POST', '/api/v1/outgoing-webhooks'],
      ['GET', '/api/v1/api-keys'],
      ['DELETE', `/api/v1/organizations/${server.organizationId}`],
      ['GET', '/api/v1/organizations/usage'],
    ] as const) {
      const result = await call(method, path, restricted, method === 'POST' ? { name: 'x', url: 'http://localhost:9/x', events: ['job.completed'] } : undefined);
      assert.equal(result.status, 403, `${method} ${path}: ${result.text}`);
      assert.match(result.body.message, /every queue/);
    }
    // Its own queue still works end to end.
    const created = await call('POST', '/api/v1/jobs', restricted, { queue_name: ALLOWED, payload: { ok: true } });
    assert.equal(created.status, 201);
    const listed = await call('GET', '/api/v1/jobs', restricted);
    assert.deepEqual(listed.body.map((j: { queue_name: string }) => j.queue_name), [ALLOWED]);
  });

  it('every gRPC method refuses the forbidden queue and its objects, which stay unchanged', async () => {
    const grpcDefinition = grpc.queue.constructor as unknown as { service: Record<string, unknown> };
    const workerDefinition = grpc.workers.constructor as unknown as { service: Record<string, unknown> };
    const expectCode = async (promise: Promise<unknown>, code: number) => {
      await assert.rejects(promise, (err: { code: number }) => err.code === code);
    };
    const checks: Record<string, () => Promise<void>> = {
      Enqueue: () => expectCode(grpc.call('queue', 'Enqueue', { queueName: FORBIDDEN, payload: toStruct({}) }), status.PERMISSION_DENIED),
      Dequeue: () => expectCode(grpc.call('queue', 'Dequeue', { queueName: FORBIDDEN, workerId: 'w', batchSize: 1 }), status.PERMISSION_DENIED),
      Complete: () => expectCode(grpc.call('queue', 'Complete', { jobId: processing.id, workerId: processing.workerId, leaseId: processing.leaseId, result: toStruct({ forged: true }) }), status.NOT_FOUND),
      Fail: () => expectCode(grpc.call('queue', 'Fail', { jobId: processing.id, workerId: processing.workerId, leaseId: processing.leaseId, error: 'forged' }), status.NOT_FOUND),
      RenewLease: async () => {
        const renewed = await grpc.call('queue', 'RenewLease', { jobId: processing.id, workerId: processing.workerId, leaseId: processing.leaseId, extensionSecs: 60 });
        assert.equal(renewed.success, false);
      },
      GetJob: async () => assert.equal((await grpc.call('queue', 'GetJob', { jobId: processing.id })).job, null),
      GetQueueStats: () => expectCode(grpc.call('queue', 'GetQueueStats', { queueName: FORBIDDEN }), status.PERMISSION_DENIED),
      StreamJobs: () => new Promise<void>((resolve, reject) => {
        const stream = grpc.queue.StreamJobs({ queueName: FORBIDDEN, workerId: 'w' }, grpc.metadata());
        stream.on('data', () => reject(new Error('StreamJobs handed out a job of a forbidden queue')));
        stream.on('error', (err: { code: number }) => (err.code === status.PERMISSION_DENIED ? resolve() : reject(err)));
      }),
      ProcessJobs: () => new Promise<void>((resolve, reject) => {
        const stream = grpc.queue.ProcessJobs(grpc.metadata());
        const answers: any[] = [];
        stream.on('data', (answer: any) => {
          answers.push(answer);
          if (answers.length < 3) return;
          stream.end();
          try {
            assert.equal(answers[0].error?.code, 'PERMISSION_DENIED');
            assert.equal(answers[1].error?.code, 'NOT_FOUND');
            assert.equal(answers[2].renewLease?.success, false);
            resolve();
          } catch (err) {
            reject(err);
          }
        });
        stream.on('error', reject);
        stream.write({ dequeue: { queueName: FORBIDDEN, workerId: 'w' } });
        stream.write({ complete: { jobId: processing.id, workerId: processing.workerId, leaseId: processing.leaseId } });
        stream.write({ renewLease: { jobId: processing.id, workerId: processing.workerId, leaseId: processing.leaseId, extensionSecs: 60 } });
      }),
      Register: () => expectCode(grpc.call('workers', 'Register', { queueName: FORBIDDEN, hostname: 'h' }), status.PERMISSION_DENIED),
      Heartbeat: async () => assert.equal((await grpc.call('workers', 'Heartbeat', { workerId, currentJobs: 0, status: 'draining' })).acknowledged, false),
      Deregister: async () => assert.equal((await grpc.call('workers', 'Deregister', { workerId })).success, false),
    };
    const methods = [...Object.keys(grpcDefinition.service), ...Object.keys(workerDefinition.service)];
    assert.ok(methods.length >= 12);
    for (const method of methods) {
      assert.ok(checks[method], `gRPC ${method} has no queue-scope check here: add one`);
      await checks[method]!();
    }
    const job = await server.request('GET', `/api/v1/jobs/${processing.id}`);
    assert.equal(job.body.status, 'processing');
    assert.equal(job.body.lease_id, processing.leaseId);
    const worker = await server.request('GET', `/api/v1/workers/${workerId}`);
    assert.notEqual(worker.body.status, 'offline');
  });
});

describe('realtime streams carry only the key\'s queues', () => {
  it('SSE /events: events of other queues are never sent; a revoked key\'s stream closes', async () => {
    const created = await server.request('POST', '/api/v1/api-keys', { body: { name: 'sse scoped', queues: [ALLOWED] } });
    const client = await openSse(`${server.url}/api/v1/events`, { authorization: `Bearer ${created.body.key}` });
    assert.equal(client.status, 200);
    const hidden = await server.request('POST', '/api/v1/jobs', { body: { queue_name: FORBIDDEN, payload: { secret: MARKER } } });
    const shown = await server.request('POST', '/api/v1/jobs', { body: { queue_name: ALLOWED, payload: {} } });
    await client.waitFor((e) => e.data.type === 'JobCreated' && e.data.data.job_id === shown.body.id);
    assert.ok(!client.events.some((e) => JSON.stringify(e.data).includes(hidden.body.id) || JSON.stringify(e.data).includes(FORBIDDEN)), 'an event of the forbidden queue was sent');
    await server.request('DELETE', `/api/v1/api-keys/${created.body.id}`);
    await Promise.race([client.ended, new Promise((_, reject) => setTimeout(() => reject(new Error('the revoked key\'s stream stayed open')), 8_000))]);
    client.close();
  });

  it('SSE for a job or queue out of reach: the job is "not found", the queue is 403', async () => {
    const job = await openSse(`${server.url}/api/v1/events/jobs/${processing.id}`, { authorization: `Bearer ${restricted}` });
    const error = await job.waitFor((e) => e.data.type === 'Error');
    assert.equal(error.data.data.message, 'Job not found');
    job.close();
    const queue = await fetch(`${server.url}/api/v1/events/queues/${FORBIDDEN}`, { headers: { authorization: `Bearer ${restricted}` } });
    assert.equal(queue.status, 403);
    await queue.body?.cancel();
  });
});

describe('key roles', () => {
  it('each role may perform exactly the operations of its needs, on every route (from the route table)', async () => {
    const ROLE_NEEDS: Record<string, string[]> = {
      admin: ['any', 'enqueue', 'work', 'read_jobs', 'job_inputs', 'read', 'manage', 'org_read', 'org_admin'],
      producer: ['any', 'enqueue', 'read_jobs', 'job_inputs'],
      worker: ['any', 'work', 'job_inputs'],
      read_only: ['any', 'read_jobs', 'job_inputs', 'read', 'org_read'],
    };
    const keys: Record<string, string> = {};
    for (const role of Object.keys(ROLE_NEEDS)) {
      const created = await server.request('POST', '/api/v1/api-keys', { body: { name: `role ${role}`, role } });
      assert.equal(created.status, 201);
      assert.equal(created.body.role, role);
      keys[role] = created.body.key;
    }
    let checked = 0;
    for (const route of routes.filter((r) => r.operation !== undefined)) {
      const need = (OPERATIONS as Record<string, string>)[route.operation!];
      assert.ok(need, `${route.method} ${route.url}: unknown operation ${route.operation}`);
      for (const role of ['producer', 'worker', 'read_only']) {
        if (ROLE_NEEDS[role]!.includes(need)) continue;
        const { path, body } = build(route, { uuid: randomUUID(), name: `role-probe-${role}` });
        const result = await call(route.method, path, keys[role]!, body);
        assert.equal(result.status, 403, `${role} key on ${route.method} ${route.url} (${route.operation}): ${result.status} ${result.text.slice(0, 200)}`);
        assert.match(result.body.message, /needs an? .*key/);
        checked += 1;
      }
    }
    assert.ok(checked > 100, `${checked} refusals checked`);
    // And what each may do works.
    const q = `role-queue-${randomBytes(3).toString('hex')}`;
    const created = await call('POST', '/api/v1/jobs', keys.producer!, { queue_name: q, payload: { a: 1 } });
    assert.equal(created.status, 201);
    assert.equal((await call('GET', `/api/v1/jobs/${created.body.id}`, keys.producer!)).status, 200);
    const worker = await call('POST', '/api/v1/workers/register', keys.worker!, { queue_name: q, hostname: 'role-host' });
    assert.equal(worker.status, 201);
    const claimed = await call('POST', '/api/v1/jobs/claim', keys.worker!, { queue_name: q, worker_id: worker.body.id });
    assert.equal(claimed.body.jobs.length, 1);
    assert.equal((await call('POST', `/api/v1/jobs/${created.body.id}/complete`, keys.worker!, { worker_id: worker.body.id, lease_id: claimed.body.jobs[0].lease_id })).status, 200);
    assert.equal((await call('GET', `/api/v1/jobs/${created.body.id}`, keys.read_only!)).body.status, 'completed');
    assert.equal((await call('GET', `/api/v1/jobs/${created.body.id}`, keys.worker!)).status, 403);
    assert.equal((await call('DELETE', `/api/v1/organizations/${server.organizationId}`, keys.worker!)).status, 403);
    // gRPC goes through the same decision.
    const workerGrpc = grpcClient(`127.0.0.1:${server.grpcPort}`, keys.worker!);
    try {
      await assert.rejects(workerGrpc.call('queue', 'Enqueue', { queueName: q, payload: toStruct({}) }), (err: { code: number }) => err.code === status.PERMISSION_DENIED);
      await assert.rejects(workerGrpc.call('queue', 'GetJob', { jobId: created.body.id }), (err: { code: number }) => err.code === status.PERMISSION_DENIED);
    } finally {
      workerGrpc.close();
    }
  });

  it('a key whose queues or role change is re-read at once on new requests and within seconds on open gRPC streams', async () => {
    const created = await server.request('POST', '/api/v1/api-keys', { body: { name: 'narrowed', queues: [ALLOWED] } });
    const key = created.body.key;
    assert.equal((await call('GET', `/api/v1/queues/${ALLOWED}/stats`, key)).status, 200);
    await server.request('PUT', `/api/v1/api-keys/${created.body.id}`, { body: { role: 'worker' } });
    assert.equal((await call('GET', `/api/v1/queues/${ALLOWED}/stats`, key)).status, 403);
    const client = grpcClient(`127.0.0.1:${server.grpcPort}`, key);
    try {
      const stream = client.queue.StreamJobs({ queueName: ALLOWED, workerId: 'narrowed-worker' }, client.metadata());
      const ended = new Promise<number>((resolve) => stream.on('error', (err: { code: number }) => resolve(err.code)));
      stream.on('data', () => {});
      await new Promise((r) => setTimeout(r, 300));
      await server.request('PUT', `/api/v1/api-keys/${created.body.id}`, { body: { queues: ['elsewhere'] } });
      assert.equal(await ended, status.PERMISSION_DENIED);
    } finally {
      client.close();
    }
  });
});
