import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { MISSING_ID, assertError, claim, enqueue, enqueueAndClaim, restrictedKey } from './jobs-helpers.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('workerproto');
});
after(async () => server.close());

const post = (path: string, body?: unknown, auth?: string) => server.request('POST', `/api/v1${path}`, { body, auth });

describe('POST /api/v1/jobs/claim', () => {
  it('leases due jobs with the ClaimedJob fields and answers { jobs: [] } when nothing is due', async () => {
    const id = await enqueue(server, { queue_name: 'claim-q', payload: { Keep: 'Case' }, max_retries: 4, timeout_seconds: 60 });
    const jobs = await claim(server, { queue_name: 'claim-q', limit: 5, lease_duration_secs: 30 });
    assert.equal(jobs.length, 1);
    const job = jobs[0];
    assert.equal(job.id, id);
    assert.equal(job.queue_name, 'claim-q');
    assert.deepEqual(job.payload, { Keep: 'Case' });
    assert.equal(job.retry_count, 0);
    assert.equal(job.max_retries, 4);
    assert.equal(job.timeout_seconds, 60);
    assert.equal(job.status, 'processing');
    assert.equal(job.assigned_worker_id, 'w1');
    assert.match(job.lease_id, /^[0-9a-f-]{36}$/);
    const leaseMs = Date.parse(job.lease_expires_at) - Date.now();
    assert.ok(leaseMs > 20_000 && leaseMs <= 31_000, `lease ${leaseMs} ms`);
    assert.deepEqual(await claim(server, { queue_name: 'claim-q' }), []);
  });

  it('clamps the lease into 5..3600 s and the limit into 1..100', async () => {
    await enqueue(server, { queue_name: 'clamp-q' });
    await enqueue(server, { queue_name: 'clamp-q' });
    const [short] = await claim(server, { queue_name: 'clamp-q', lease_duration_secs: 1, limit: 0 });
    const shortMs = Date.parse(short.lease_expires_at) - Date.now();
    assert.ok(shortMs > 2_000 && shortMs <= 5_500, `lease ${shortMs} ms`);
    const long = await claim(server, { queue_name: 'clamp-q', lease_duration_secs: 1_000_000, limit: 5000 });
    assert.equal(long.length, 1);
    const longMs = Date.parse(long[0].lease_expires_at) - Date.now();
    assert.ok(longMs > 3_590_000 && longMs <= 3_601_000, `lease ${longMs} ms`);
  });

  it('validates the body with 400s naming the field', async () => {
    assertError(await post('/jobs/claim', { queue_name: 'q' }), 400, 'VALIDATION_ERROR', /worker_id/);
    assertError(await post('/jobs/claim', { worker_id: 'w' }), 400, 'VALIDATION_ERROR', /queue_name/);
    assertError(await post('/jobs/claim', { queue_name: '', worker_id: 'w' }), 400, 'VALIDATION_ERROR', /queue_name/);
    assertError(await post('/jobs/claim', { queue_name: 'q', worker_id: '' }), 400, 'VALIDATION_ERROR', /worker_id/);
    assertError(await post('/jobs/claim', { queue_name: 'q', worker_id: 'w', limit: '5' }), 400, 'VALIDATION_ERROR', /limit/);
    assertError(await post('/jobs/claim', { queue_name: 'q', worker_id: 'w', wait_ms: 30_001 }), 400, 'VALIDATION_ERROR', /wait_ms/);
    assertError(await post('/jobs/claim', { queue_name: 'q', worker_id: 'w', wait_ms: -1 }), 400, 'VALIDATION_ERROR', /wait_ms/);
    assertError(await post('/jobs/claim', { queue_name: 'q', worker_id: 'w'.repeat(256) }), 400, 'VALIDATION_ERROR', /worker_id/);
    assertError(await server.request('POST', '/api/v1/jobs/claim', { rawBody: '' }), 400, 'VALIDATION_ERROR');
  });

  it('refuses a queue the API key may not use with 403', async () => {
    const key = await restrictedKey(server, ['allowed-*']);
    assertError(await post('/jobs/claim', { queue_name: 'other', worker_id: 'w' }, key), 403, 'ACCESS_DENIED');
    assert.equal((await post('/jobs/claim', { queue_name: 'allowed-1', worker_id: 'w' }, key)).status, 200);
  });

  it('hands one job to exactly one of two concurrent claims', async () => {
    const id = await enqueue(server, { queue_name: 'race-q' });
    const results = await Promise.all([1, 2].map((n) => claim(server, { queue_name: 'race-q', worker_id: `w${n}` })));
    const won = results.flat();
    assert.equal(won.length, 1);
    assert.equal(won[0].id, id);
  });
});

describe('POST /api/v1/jobs/{id}/complete', () => {
  it('completes a held job; GET shows completed with the result, stored verbatim', async () => {
    const job = await enqueueAndClaim(server, 'complete-q');
    const res = await post(`/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: job.lease_id, result: { camelCase: [1, 2] } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true });
    const stored = (await server.request('GET', `/api/v1/jobs/${job.id}`)).body;
    assert.equal(stored.status, 'completed');
    assert.deepEqual(stored.result, { camelCase: [1, 2] });
    assert.ok(stored.completed_at);
    assert.equal(stored.lease_id, null);
  });

  it('stores null when result is absent (legacy fencing by worker_id only)', async () => {
    const job = await enqueueAndClaim(server, 'complete-q2');
    assert.equal((await post(`/jobs/${job.id}/complete`, { worker_id: 'w1' })).status, 200);
    assert.equal((await server.request('GET', `/api/v1/jobs/${job.id}`)).body.result, null);
  });

  it('answers 404 job_not_found_or_not_owned for another worker, unknown and malformed ids', async () => {
    const job = await enqueueAndClaim(server, 'complete-q3');
    for (const [id, worker] of [[job.id, 'intruder'], [MISSING_ID, 'w1'], ['not-a-uuid', 'w1']] as const) {
      const res = await post(`/jobs/${id}/complete`, { worker_id: worker });
      assertError(res, 404, 'NOT_FOUND');
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, 'job_not_found_or_not_owned');
    }
    assertError(await post(`/jobs/${job.id}/complete`, {}), 400, 'VALIDATION_ERROR', /worker_id/);
  });

  it('answers 409 LEASE_EXPIRED for a stale lease', async () => {
    const job = await enqueueAndClaim(server, 'complete-q4');
    const res = await post(`/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: '11111111-1111-4111-8111-111111111111' });
    assertError(res, 409, 'LEASE_EXPIRED');
    assert.equal((await server.request('GET', `/api/v1/jobs/${job.id}`)).body.status, 'processing');
  });

  it('of 5 concurrent completes of one job exactly one succeeds; the rest get clean 4xx', async () => {
    for (const withLease of [true, false]) {
      const job = await enqueueAndClaim(server, `complete-race-${withLease}`);
      const body = withLease ? { worker_id: 'w1', lease_id: job.lease_id, result: 1 } : { worker_id: 'w1', result: 1 };
      const results = await Promise.all(Array.from({ length: 5 }, () => post(`/jobs/${job.id}/complete`, body)));
      const statuses = results.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 200).length, 1, `statuses ${statuses}`);
      for (const r of results.filter((x) => x.status !== 200)) {
        assert.ok(r.status === 404 || r.status === 409, `status ${r.status}`);
        assert.equal(r.body.success, false);
      }
    }
  });
});

describe('POST /api/v1/jobs/{id}/fail', () => {
  it('with retries left: back to pending with retry_count 1 and last_error', async () => {
    const job = await enqueueAndClaim(server, 'fail-q', { max_retries: 2 });
    const res = await post(`/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: job.lease_id, error: 'boom' });
    assert.equal(res.status, 200);
    assert.equal(res.body.success, true);
    assert.equal(res.body.will_retry, true);
    const stored = (await server.request('GET', `/api/v1/jobs/${job.id}`)).body;
    assert.equal(stored.status, 'pending');
    assert.equal(stored.retry_count, 1);
    assert.equal(stored.last_error, 'boom');
    assert.equal(stored.assigned_worker_id, null);
    assert.ok(Date.parse(stored.scheduled_at) > Date.now() - 1000, 'backoff pushes scheduled_at forward');
  });

  it('with max_retries 0: dead-lettered and listed by GET /jobs/dlq', async () => {
    const job = await enqueueAndClaim(server, 'fail-dlq', { max_retries: 0 });
    const res = await post(`/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: job.lease_id, error: 'fatal' });
    assert.equal(res.body.will_retry, false);
    assert.equal((await server.request('GET', `/api/v1/jobs/${job.id}`)).body.status, 'deadletter');
    const dlq = await server.request('GET', '/api/v1/jobs/dlq?queue_name=fail-dlq');
    assert.deepEqual(dlq.body.map((j: any) => j.id), [job.id]);
    assert.equal(dlq.body[0].status, 'deadletter');
    assert.equal(dlq.body[0].last_error, 'fatal');
  });

  it('retryable:false dead-letters at once (extension); long errors are truncated, not refused', async () => {
    const job = await enqueueAndClaim(server, 'fail-q2', { max_retries: 5 });
    const res = await post(`/jobs/${job.id}/fail`, { worker_id: 'w1', error: 'x'.repeat(5000), retryable: false });
    assert.equal(res.status, 200, res.text);
    const stored = (await server.request('GET', `/api/v1/jobs/${job.id}`)).body;
    assert.equal(stored.status, 'deadletter');
    assert.equal(stored.last_error.length, 4096);
  });

  it('validates error and answers 404 / 409 like complete', async () => {
    const job = await enqueueAndClaim(server, 'fail-q3');
    assertError(await post(`/jobs/${job.id}/fail`, { worker_id: 'w1', error: '' }), 400, 'VALIDATION_ERROR', /error/);
    assertError(await post(`/jobs/${job.id}/fail`, { worker_id: 'w1' }), 400, 'VALIDATION_ERROR', /error/);
    assertError(await post(`/jobs/${job.id}/fail`, { worker_id: 'w1', error: 42 }), 400, 'VALIDATION_ERROR', /error/);
    const notOwned = await post(`/jobs/${job.id}/fail`, { worker_id: 'w2', error: 'e' });
    assertError(notOwned, 404, 'NOT_FOUND');
    assert.equal(notOwned.body.error, 'job_not_found_or_not_owned');
    assertError(await post(`/jobs/${job.id}/fail`, { worker_id: 'w1', error: 'e', lease_id: MISSING_ID }), 409, 'LEASE_EXPIRED');
    assertError(await post('/jobs/bogus/fail', { worker_id: 'w1', error: 'e' }), 404, 'NOT_FOUND');
  });
});

describe('POST /api/v1/jobs/{id}/heartbeat', () => {
  it('extends the lease and reports cancel_requested and lease_expires_at', async () => {
    const job = await enqueueAndClaim(server, 'hb-q');
    const res = await post(`/jobs/${job.id}/heartbeat`, { worker_id: 'w1', lease_id: job.lease_id, lease_duration_secs: 600 });
    assert.equal(res.status, 200);
    assert.equal(res.body.success, true);
    assert.equal(res.body.cancel_requested, false);
    const ms = Date.parse(res.body.lease_expires_at) - Date.now();
    assert.ok(ms > 590_000 && ms <= 601_000, `lease ${ms}`);
    assert.equal((await server.request('GET', `/api/v1/jobs/${job.id}`)).body.lease_expires_at, res.body.lease_expires_at);
  });

  it('answers 404 for another worker or unknown id and 409 for a stale lease', async () => {
    const job = await enqueueAndClaim(server, 'hb-q2');
    const other = await post(`/jobs/${job.id}/heartbeat`, { worker_id: 'w9', lease_duration_secs: 30 });
    assertError(other, 404, 'NOT_FOUND');
    assert.equal(other.body.error, 'job_not_found_or_not_owned');
    assertError(await post(`/jobs/${MISSING_ID}/heartbeat`, { worker_id: 'w1', lease_duration_secs: 30 }), 404, 'NOT_FOUND');
    assertError(await post(`/jobs/${job.id}/heartbeat`, { worker_id: 'w1', lease_id: MISSING_ID, lease_duration_secs: 30 }), 409, 'LEASE_EXPIRED');
    assertError(await post(`/jobs/${job.id}/heartbeat`, { worker_id: 'w1', lease_duration_secs: 'long' }), 400, 'VALIDATION_ERROR', /lease_duration_secs/);
  });
});

describe('batch complete and fail (extension)', () => {
  it('POST /jobs/complete answers one result per item, in order', async () => {
    await Promise.all([0, 1, 2].map((i) => enqueue(server, { queue_name: 'batch-c', payload: i })));
    const jobs = await claim(server, { queue_name: 'batch-c', limit: 3 });
    assert.equal(jobs.length, 3);
    const res = await post('/jobs/complete', {
      worker_id: 'w1',
      items: [
        { job_id: jobs[0].id, lease_id: jobs[0].lease_id, result: { ok: 0 } },
        { job_id: jobs[1].id, lease_id: MISSING_ID },
        { job_id: 'nope' },
        { job_id: jobs[2].id },
        { job_id: jobs[0].id },
      ],
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.results, [
      { job_id: jobs[0].id, success: true },
      { job_id: jobs[1].id, success: false, error: 'lease_expired' },
      { job_id: 'nope', success: false, error: 'job_not_found_or_not_owned' },
      { job_id: jobs[2].id, success: true },
      { job_id: jobs[0].id, success: false, error: 'duplicate_job_id' },
    ]);
    assert.deepEqual((await server.request('GET', `/api/v1/jobs/${jobs[0].id}`)).body.result, { ok: 0 });
    assert.equal((await server.request('GET', `/api/v1/jobs/${jobs[1].id}`)).body.status, 'processing');
    assertError(await post('/jobs/complete', { worker_id: 'w1', items: [] }), 400, 'VALIDATION_ERROR', /items/);
    assertError(await post('/jobs/complete', { items: [{ job_id: jobs[1].id }] }), 400, 'VALIDATION_ERROR', /worker_id/);
  });

  it('POST /jobs/fail reports will_retry per item', async () => {
    await enqueue(server, { queue_name: 'batch-f', max_retries: 1 });
    await enqueue(server, { queue_name: 'batch-f', max_retries: 0 });
    const jobs = await claim(server, { queue_name: 'batch-f', limit: 2 });
    const res = await post('/jobs/fail', {
      worker_id: 'w1',
      items: jobs.map((j) => ({ job_id: j.id, lease_id: j.lease_id, error: 'e' })).concat([{ job_id: MISSING_ID, lease_id: null, error: 'e' }]),
    });
    assert.equal(res.status, 200, res.text);
    const byId = new Map(res.body.results.map((r: any) => [r.job_id, r]));
    const retrying = jobs.find((j) => j.max_retries === 1);
    const dead = jobs.find((j) => j.max_retries === 0);
    assert.deepEqual(byId.get(retrying.id), { job_id: retrying.id, success: true, will_retry: true });
    assert.deepEqual(byId.get(dead.id), { job_id: dead.id, success: true, will_retry: false });
    assert.deepEqual(byId.get(MISSING_ID), { job_id: MISSING_ID, success: false, error: 'job_not_found_or_not_owned' });
    assertError(await post('/jobs/fail', { worker_id: 'w1', items: [{ job_id: MISSING_ID }] }), 400, 'VALIDATION_ERROR', /error/);
  });
});

describe('dead-letter queue', () => {
  async function deadLetter(queue: string): Promise<string> {
    const job = await enqueueAndClaim(server, queue, { max_retries: 0 });
    await post(`/jobs/${job.id}/fail`, { worker_id: 'w1', error: 'dead' });
    return job.id;
  }

  it('GET /jobs/dlq lists newest first as JobSummary rows (limit clamped)', async () => {
    const a = await deadLetter('dlq-list');
    const b = await deadLetter('dlq-list');
    const res = await server.request('GET', '/api/v1/jobs/dlq?queue_name=dlq-list&limit=500');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.map((j: any) => j.id), [b, a]);
    for (const key of ['id', 'queue_name', 'status', 'priority', 'retry_count', 'created_at', 'scheduled_at', 'started_at', 'completed_at']) assert.ok(key in res.body[0], key);
    assert.equal((await server.request('GET', '/api/v1/jobs/dlq?queue_name=dlq-list&limit=0')).body.length, 1);
  });

  it('POST /jobs/dlq/retry replays by ids or by queue, with retry_count reset', async () => {
    const a = await deadLetter('dlq-retry');
    const b = await deadLetter('dlq-retry');
    const byId = await post('/jobs/dlq/retry', { job_ids: [a, MISSING_ID, 'junk'] });
    assert.equal(byId.status, 200);
    assert.deepEqual(byId.body, { retried_count: 1, retried_jobs: [a] });
    const stored = (await server.request('GET', `/api/v1/jobs/${a}`)).body;
    assert.equal(stored.status, 'pending');
    assert.equal(stored.retry_count, 0);
    const byQueue = await post('/jobs/dlq/retry', { queue_name: 'dlq-retry', limit: 10 });
    assert.deepEqual(byQueue.body, { retried_count: 1, retried_jobs: [b] });
    const everything = await server.request('POST', '/api/v1/jobs/dlq/retry', { rawBody: '' });
    assert.equal(everything.status, 200);
    assert.equal(everything.body.retried_count, everything.body.retried_jobs.length);
    assert.deepEqual((await server.request('GET', '/api/v1/jobs/dlq')).body, []);
    assertError(await post('/jobs/dlq/retry', { limit: 0 }), 400, 'VALIDATION_ERROR', /limit/);
    assertError(await post('/jobs/dlq/retry', { job_ids: 'a' }), 400, 'VALIDATION_ERROR', /job_ids/);
  });

  it('POST /jobs/dlq/purge needs confirm:true and deletes dead-lettered jobs', async () => {
    const a = await deadLetter('dlq-purge');
    assertError(await post('/jobs/dlq/purge', { queue_name: 'dlq-purge' }), 400, 'VALIDATION_ERROR', /confirm/);
    assertError(await post('/jobs/dlq/purge', { queue_name: 'dlq-purge', confirm: false }), 400, 'VALIDATION_ERROR', /confirm/);
    assertError(await post('/jobs/dlq/purge', { queue_name: 'dlq-purge', confirm: 'yes' }), 400, 'VALIDATION_ERROR', /confirm/);
    const old = await post('/jobs/dlq/purge', { queue_name: 'dlq-purge', confirm: true, older_than: '2000-01-01T00:00:00Z' });
    assert.deepEqual(old.body, { purged_count: 0 });
    const res = await post('/jobs/dlq/purge', { queue_name: 'dlq-purge', confirm: true });
    assert.deepEqual(res.body, { purged_count: 1 });
    assert.equal((await server.request('GET', `/api/v1/jobs/${a}`)).status, 404);
  });
});

describe('a full worker flow', () => {
  it('register → claim → heartbeat → complete → GET job shows completed with result', async () => {
    const id = await enqueue(server, { queue_name: 'flow-q', payload: { n: 1 } });
    const reg = await post('/workers/register', { queue_name: 'flow-q', hostname: 'host-1', worker_type: 'nodejs', max_concurrency: 5, metadata: {}, version: '1.0.40' });
    assert.equal(reg.status, 201);
    const workerId = reg.body.id;
    const [job] = await claim(server, { queue_name: 'flow-q', worker_id: workerId, limit: 5, lease_duration_secs: 30 });
    assert.equal(job.id, id);
    assert.equal((await post(`/jobs/${id}/heartbeat`, { worker_id: workerId, lease_duration_secs: 30, lease_id: job.lease_id })).status, 200);
    assert.equal((await post(`/workers/${workerId}/heartbeat`, { current_jobs: 1, status: 'healthy' })).status, 200);
    assert.equal((await post(`/jobs/${id}/complete`, { worker_id: workerId, lease_id: job.lease_id, result: { done: true } })).status, 200);
    const stored = (await server.request('GET', `/api/v1/jobs/${id}`)).body;
    assert.equal(stored.status, 'completed');
    assert.deepEqual(stored.result, { done: true });
    assert.equal(stored.assigned_worker_id, workerId);
    assert.equal((await server.request('POST', `/api/v1/workers/${workerId}/deregister`, { rawBody: '' })).status, 204);
  });
});
