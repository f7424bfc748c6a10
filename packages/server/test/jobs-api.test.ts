import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { MISSING_ID, assertError, claim, enqueue, enqueueAndClaim } from './jobs-helpers.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('jobsapi');
});
after(async () => server.close());

const SUMMARY_KEYS = ['attempt', 'completed_at', 'created_at', 'id', 'max_retries', 'priority', 'queue_name', 'retry_count', 'scheduled_at', 'started_at', 'status'];

describe('GET /api/v1/jobs', () => {
  let ids: string[];
  before(async () => {
    ids = [
      await enqueue(server, { queue_name: 'list-a', priority: 5, tags: { team: 'x' } }),
      await enqueue(server, { queue_name: 'list-a', priority: -5 }),
      await enqueue(server, { queue_name: 'list-b', priority: 1, tags: { env: 'prod' } }),
    ];
  });

  it('returns a bare array of JobSummary rows, newest first', async () => {
    const res = await server.request('GET', '/api/v1/jobs');
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body));
    assert.deepEqual(Object.keys(res.body[0]).sort(), SUMMARY_KEYS);
    const mine = res.body.filter((j: any) => ids.includes(j.id)).map((j: any) => j.id);
    assert.deepEqual(mine, [...ids].reverse());
  });

  it('gives each row attempt (= retry_count) and max_retries, which the official Spooled dashboard shows as attempt / max', async () => {
    const id = await enqueue(server, { queue_name: 'list-attempt', max_retries: 7 });
    const [claimed] = await claim(server, { queue_name: 'list-attempt' });
    await server.request('POST', `/api/v1/jobs/${id}/fail`, { body: { worker_id: 'w1', lease_id: claimed.lease_id, error: 'once' } });
    const row = (await server.request('GET', '/api/v1/jobs?queue_name=list-attempt')).body[0];
    assert.deepEqual({ retry_count: row.retry_count, attempt: row.attempt, max_retries: row.max_retries }, { retry_count: 1, attempt: 1, max_retries: 7 });
  });

  it('filters by queue_name, status and tag; ignores an invalid status', async () => {
    const byQueue = await server.request('GET', '/api/v1/jobs?queue_name=list-a');
    assert.deepEqual(byQueue.body.map((j: any) => j.id).sort(), [ids[0], ids[1]].sort());
    const byTag = await server.request('GET', '/api/v1/jobs?tag=team');
    assert.deepEqual(byTag.body.map((j: any) => j.id), [ids[0]]);
    const byStatus = await server.request('GET', '/api/v1/jobs?queue_name=list-b&status=pending');
    assert.deepEqual(byStatus.body.map((j: any) => j.id), [ids[2]]);
    const none = await server.request('GET', '/api/v1/jobs?queue_name=list-b&status=completed');
    assert.deepEqual(none.body, []);
    const invalid = await server.request('GET', '/api/v1/jobs?queue_name=list-b&status=bogus');
    assert.equal(invalid.status, 200);
    assert.deepEqual(invalid.body.map((j: any) => j.id), [ids[2]]);
  });

  it('honours whitelisted order_by/order_dir, ignores others, and pages with limit/offset', async () => {
    const asc = await server.request('GET', '/api/v1/jobs?queue_name=list-a&order_by=priority&order_dir=asc');
    assert.deepEqual(asc.body.map((j: any) => j.priority), [-5, 5]);
    const desc = await server.request('GET', '/api/v1/jobs?queue_name=list-a&order_by=priority');
    assert.deepEqual(desc.body.map((j: any) => j.priority), [5, -5]);
    const bogus = await server.request('GET', '/api/v1/jobs?queue_name=list-a&order_by=payload;drop&order_dir=sideways');
    assert.equal(bogus.status, 200);
    assert.deepEqual(bogus.body.map((j: any) => j.id), [ids[1], ids[0]]);
    const page = await server.request('GET', '/api/v1/jobs?queue_name=list-a&limit=1&offset=1');
    assert.deepEqual(page.body.map((j: any) => j.id), [ids[0]]);
  });

  it('clamps limit into 1..100 instead of rejecting it', async () => {
    const bulk = await server.request('POST', '/api/v1/jobs/bulk', { body: { queue_name: 'list-many', jobs: Array.from({ length: 120 }, (_, i) => ({ payload: { i } })) } });
    assert.equal(bulk.body.success_count, 120);
    assert.equal((await server.request('GET', '/api/v1/jobs?queue_name=list-many&limit=1000')).body.length, 100);
    assert.equal((await server.request('GET', '/api/v1/jobs?queue_name=list-many&limit=0')).body.length, 1);
    assert.equal((await server.request('GET', '/api/v1/jobs?queue_name=list-many&limit=-3')).body.length, 1);
    assert.equal((await server.request('GET', '/api/v1/jobs?queue_name=list-many&limit=abc')).body.length, 50);
    assert.equal((await server.request('GET', '/api/v1/jobs?queue_name=list-many&offset=-10&limit=2')).body.length, 2);
  });
});

describe('GET /api/v1/jobs/stats and /jobs/status', () => {
  it('counts every status of the organization with a total', async () => {
    const other = await server.createOrganization();
    const before = (await server.request('GET', '/api/v1/jobs/stats', { auth: other.apiKey })).body;
    assert.deepEqual(Object.keys(before).sort(), ['cancelled', 'completed', 'deadletter', 'failed', 'pending', 'processing', 'scheduled', 'total']);
    await server.request('POST', '/api/v1/jobs', { auth: other.apiKey, body: { queue_name: 's', payload: 1 } });
    await server.request('POST', '/api/v1/jobs', { auth: other.apiKey, body: { queue_name: 's', payload: 2, scheduled_at: new Date(Date.now() + 3_600_000).toISOString() } });
    const stats = (await server.request('GET', '/api/v1/jobs/stats', { auth: other.apiKey })).body;
    assert.equal(stats.pending, before.pending + 1);
    assert.equal(stats.scheduled, before.scheduled + 1);
    assert.equal(stats.total, before.total + 2);
  });

  it('answers the status of the ids that exist, skipping unknown and malformed ones', async () => {
    const a = await enqueue(server, { queue_name: 'status-q' });
    const b = await enqueue(server, { queue_name: 'status-q' });
    const res = await server.request('GET', `/api/v1/jobs/status?ids=${a},${b},${MISSING_ID},not-an-id`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.map((r: any) => r.id).sort(), [a, b].sort());
    assert.deepEqual(Object.keys(res.body[0]).sort(), ['completed_at', 'created_at', 'id', 'queue_name', 'retry_count', 'status']);
    assert.equal(res.body[0].status, 'pending');
    assert.deepEqual((await server.request('GET', '/api/v1/jobs/status')).body, []);
  });

  it('refuses more than 100 ids with a 400 naming ids', async () => {
    const ids = Array.from({ length: 101 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`).join(',');
    assertError(await server.request('GET', `/api/v1/jobs/status?ids=${ids}`), 400, 'VALIDATION_ERROR', /ids/);
  });
});

describe('DELETE /api/v1/jobs/{id} (cancel)', () => {
  it('cancels pending and scheduled jobs (204, no body)', async () => {
    const pending = await enqueue(server, { queue_name: 'cancel-q' });
    const res = await server.request('DELETE', `/api/v1/jobs/${pending}`);
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    assert.equal((await server.request('GET', `/api/v1/jobs/${pending}`)).body.status, 'cancelled');
    const scheduled = await enqueue(server, { queue_name: 'cancel-q', scheduled_at: new Date(Date.now() + 3_600_000).toISOString() });
    assert.equal((await server.request('DELETE', `/api/v1/jobs/${scheduled}`)).status, 204);
  });

  it('answers 409 for finished jobs and 404 for unknown or malformed ids', async () => {
    const id = await enqueue(server, { queue_name: 'cancel-q2' });
    await server.request('DELETE', `/api/v1/jobs/${id}`);
    assertError(await server.request('DELETE', `/api/v1/jobs/${id}`), 409, 'CONFLICT');
    assertError(await server.request('DELETE', `/api/v1/jobs/${MISSING_ID}`), 404, 'NOT_FOUND');
    assertError(await server.request('DELETE', '/api/v1/jobs/nope'), 404, 'NOT_FOUND');
  });

  it('marks a processing job cancel-requested (409 with details) and its worker learns it on heartbeat', async () => {
    const job = await enqueueAndClaim(server, 'cancel-running');
    const res = await server.request('DELETE', `/api/v1/jobs/${job.id}`);
    assertError(res, 409, 'CONFLICT');
    assert.equal(res.body.details.cancel_requested, true);
    const beat = await server.request('POST', `/api/v1/jobs/${job.id}/heartbeat`, { body: { worker_id: 'w1', lease_id: job.lease_id, lease_duration_secs: 30 } });
    assert.equal(beat.status, 200);
    assert.equal(beat.body.cancel_requested, true);
    const fail = await server.request('POST', `/api/v1/jobs/${job.id}/fail`, { body: { worker_id: 'w1', lease_id: job.lease_id, error: 'cancelled by request' } });
    assert.equal(fail.status, 200);
    assert.equal((await server.request('GET', `/api/v1/jobs/${job.id}`)).body.status, 'cancelled');
  });
});

describe('POST /api/v1/jobs/{id}/retry', () => {
  it('puts a dead-lettered job back to pending and returns the full job (empty JSON body accepted)', async () => {
    const job = await enqueueAndClaim(server, 'retry-q', { max_retries: 0 });
    await server.request('POST', `/api/v1/jobs/${job.id}/fail`, { body: { worker_id: 'w1', error: 'boom' } });
    const res = await server.request('POST', `/api/v1/jobs/${job.id}/retry`, { rawBody: '' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.id, job.id);
    assert.equal(res.body.status, 'pending');
    assert.equal(res.body.retry_count, 1);
    assert.equal(res.body.last_error, null);
    assert.equal(res.body.lease_id, null);
    assert.ok('organization_id' in res.body && 'dependencies_met' in res.body);
    assert.equal((await claim(server, { queue_name: 'retry-q' }))[0].id, job.id);
  });

  it('answers 409 for a job that is not failed and 404 for unknown ids', async () => {
    const id = await enqueue(server, { queue_name: 'retry-q2' });
    assertError(await server.request('POST', `/api/v1/jobs/${id}/retry`), 409, 'CONFLICT');
    assertError(await server.request('POST', `/api/v1/jobs/${MISSING_ID}/retry`), 404, 'NOT_FOUND');
    assertError(await server.request('POST', '/api/v1/jobs/x/retry'), 404, 'NOT_FOUND');
  });
});

describe('PUT /api/v1/jobs/{id}/priority', () => {
  it('changes a pending job and reports old and new priority', async () => {
    const id = await enqueue(server, { queue_name: 'prio-q', priority: 3 });
    const res = await server.request('PUT', `/api/v1/jobs/${id}/priority`, { body: { priority: 42 } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { job_id: id, old_priority: 3, new_priority: 42 });
    assert.equal((await server.request('GET', `/api/v1/jobs/${id}`)).body.priority, 42);
  });

  it('validates the priority and answers 404 for jobs that are not pending or scheduled', async () => {
    const id = await enqueue(server, { queue_name: 'prio-q2' });
    assertError(await server.request('PUT', `/api/v1/jobs/${id}/priority`, { body: { priority: 101 } }), 400, 'VALIDATION_ERROR', /priority/);
    assertError(await server.request('PUT', `/api/v1/jobs/${id}/priority`, { body: { priority: '5' } }), 400, 'VALIDATION_ERROR', /priority/);
    assertError(await server.request('PUT', `/api/v1/jobs/${id}/priority`, { rawBody: '' }), 400, 'VALIDATION_ERROR', /priority/);
    const running = await enqueueAndClaim(server, 'prio-q3');
    assertError(await server.request('PUT', `/api/v1/jobs/${running.id}/priority`, { body: { priority: 1 } }), 404, 'NOT_FOUND');
    assertError(await server.request('PUT', `/api/v1/jobs/${MISSING_ID}/priority`, { body: { priority: 1 } }), 404, 'NOT_FOUND');
    assertError(await server.request('PUT', '/api/v1/jobs/zzz/priority', { body: { priority: 1 } }), 404, 'NOT_FOUND');
  });
});

describe('POST /api/v1/jobs/bulk', () => {
  it('inserts the valid items, reports invalid ones by index, and applies defaults', async () => {
    const res = await server.request('POST', '/api/v1/jobs/bulk', {
      body: {
        queue_name: 'bulk-q',
        default_priority: 7,
        default_max_retries: 9,
        jobs: [
          { payload: { n: 0 } },
          { payload: { n: 1 }, priority: 500 },
          { priority: 1 },
          { payload: { n: 3 }, priority: -1, idempotency_key: 'bulk-k' },
          { payload: { n: 4 }, idempotency_key: 'bulk-k' },
          'not an object',
        ],
      },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.total, 6);
    assert.equal(res.body.success_count, 3);
    assert.equal(res.body.failure_count, 3);
    assert.deepEqual(res.body.failed.map((f: any) => f.index), [1, 2, 5]);
    assert.match(res.body.failed[0].error, /jobs\[1\]\.priority/);
    assert.match(res.body.failed[1].error, /jobs\[2\]\.payload/);
    const [first, keyed, repeat] = res.body.succeeded;
    assert.deepEqual([first.index, keyed.index, repeat.index], [0, 3, 4]);
    assert.equal(keyed.created, true);
    assert.equal(repeat.created, false);
    assert.equal(repeat.job_id, keyed.job_id);
    const job = (await server.request('GET', `/api/v1/jobs/${first.job_id}`)).body;
    assert.equal(job.priority, 7);
    assert.equal(job.max_retries, 9);
    assert.equal((await server.request('GET', `/api/v1/jobs/${keyed.job_id}`)).body.priority, -1);
  });

  it('accepts up to 1000 jobs (extension) and refuses 0 or 1001 with a 400', async () => {
    const many = await server.request('POST', '/api/v1/jobs/bulk', { body: { queue_name: 'bulk-big', jobs: Array.from({ length: 1000 }, (_, i) => ({ payload: i })) } });
    assert.equal(many.status, 200);
    assert.equal(many.body.success_count, 1000);
    assertError(await server.request('POST', '/api/v1/jobs/bulk', { body: { queue_name: 'bulk-big', jobs: [] } }), 400, 'VALIDATION_ERROR', /jobs/);
    assertError(await server.request('POST', '/api/v1/jobs/bulk', { body: { queue_name: 'bulk-big', jobs: Array.from({ length: 1001 }, () => ({ payload: 1 })) } }), 400, 'VALIDATION_ERROR', /jobs/);
    assertError(await server.request('POST', '/api/v1/jobs/bulk', { body: { queue_name: 'bad name!', jobs: [{ payload: 1 }] } }), 400, 'VALIDATION_ERROR', /queue_name/);
    assertError(await server.request('POST', '/api/v1/jobs/bulk', { body: { jobs: [{ payload: 1 }] } }), 400, 'VALIDATION_ERROR', /queue_name/);
  });
});

describe("another organization's key", () => {
  it('sees none of our jobs, workers, queues or DLQ entries (404 or empty)', async () => {
    const other = await server.createOrganization();
    const as = (method: string, path: string, body?: unknown) => server.request(method, `/api/v1${path}`, { body, auth: other.apiKey });
    const pending = await enqueue(server, { queue_name: 'iso-q', tags: { iso: true } });
    const running = await enqueueAndClaim(server, 'iso-run');
    const dead = await enqueueAndClaim(server, 'iso-dead', { max_retries: 0 });
    await server.request('POST', `/api/v1/jobs/${dead.id}/fail`, { body: { worker_id: 'w1', error: 'x' } });
    await server.request('PUT', '/api/v1/queues/iso-q/config', { body: {} });
    const worker = (await server.request('POST', '/api/v1/workers/register', { body: { queue_name: 'iso-q', hostname: 'h' } })).body.id;

    for (const [method, path, body] of [
      ['GET', `/jobs/${pending}`],
      ['DELETE', `/jobs/${pending}`],
      ['POST', `/jobs/${dead.id}/retry`, {}],
      ['PUT', `/jobs/${pending}/priority`, { priority: 1 }],
      ['POST', `/jobs/${running.id}/complete`, { worker_id: 'w1' }],
      ['POST', `/jobs/${running.id}/fail`, { worker_id: 'w1', error: 'e' }],
      ['POST', `/jobs/${running.id}/heartbeat`, { worker_id: 'w1', lease_duration_secs: 30 }],
      ['GET', '/queues/iso-q'],
      ['POST', '/queues/iso-q/resume', {}],
      ['DELETE', '/queues/iso-q'],
      ['GET', `/workers/${worker}`],
      ['POST', `/workers/${worker}/heartbeat`, { current_jobs: 0 }],
      ['POST', `/workers/${worker}/deregister`, {}],
    ] as [string, string, unknown?][]) {
      assert.equal((await as(method, path, body)).status, 404, `${method} ${path}`);
    }
    assert.deepEqual((await as('GET', '/jobs?tag=iso')).body, []);
    assert.deepEqual((await as('GET', `/jobs/status?ids=${pending},${running.id}`)).body, []);
    assert.deepEqual((await as('GET', '/jobs/dlq')).body, []);
    assert.deepEqual((await as('POST', '/jobs/dlq/retry', { job_ids: [dead.id] })).body, { retried_count: 0, retried_jobs: [] });
    assert.deepEqual((await as('POST', '/jobs/dlq/purge', { confirm: true })).body, { purged_count: 0 });
    assert.deepEqual((await as('GET', '/queues')).body, []);
    assert.deepEqual((await as('GET', '/workers')).body, []);
    assert.deepEqual((await as('POST', '/jobs/claim', { queue_name: 'iso-q', worker_id: 'thief' })).body, { jobs: [] });
    assert.deepEqual((await as('POST', '/jobs/complete', { worker_id: 'w1', items: [{ job_id: running.id }] })).body.results[0].success, false);
    assert.equal((await as('GET', '/queues/iso-q/stats')).body.pending_jobs, 0);
    assert.equal((await server.request('GET', `/api/v1/jobs/${running.id}`)).body.status, 'processing', 'nothing of ours changed');
    assert.equal((await server.request('GET', `/api/v1/jobs/${pending}`)).body.status, 'pending');
  });
});

describe('OpenAPI at /docs', () => {
  it('publishes the job routes with the extensions marked', async () => {
    const res = await server.request('GET', '/docs/json', { auth: null });
    assert.equal(res.status, 200);
    const paths = res.body.paths;
    assert.ok(paths['/api/v1/jobs/complete'].post.tags.includes('extension'));
    assert.ok(paths['/api/v1/jobs/fail'].post.tags.includes('extension'));
    const claimSchema = paths['/api/v1/jobs/claim'].post.requestBody.content['application/json'].schema;
    assert.match(claimSchema.properties.wait_ms.description, /extension/);
    for (const path of ['/api/v1/jobs/stats', '/api/v1/jobs/dlq', '/api/v1/queues/{name}/stats', '/api/v1/workers/{id}']) assert.ok(paths[path], path);
  });
});
