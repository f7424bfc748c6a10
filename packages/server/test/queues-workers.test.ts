import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { MISSING_ID, assertError, claim, enqueue, enqueueAndClaim, restrictedKey } from './jobs-helpers.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('queuesworkers');
});
after(async () => server.close());

const req = (method: string, path: string, body?: unknown, auth?: string) => server.request(method, `/api/v1${path}`, { body, auth });
const empty = (method: string, path: string) => server.request(method, `/api/v1${path}`, { rawBody: '' });

const CONFIG_KEYS = ['created_at', 'default_timeout', 'enabled', 'id', 'max_retries', 'organization_id', 'queue_name', 'rate_limit', 'settings', 'updated_at'];

describe('queues', () => {
  it('PUT /queues/{name}/config upserts a QueueConfig; the path wins over the body', async () => {
    const res = await req('PUT', '/queues/cfg-q/config', { queue_name: 'something-else', max_retries: 7, default_timeout: 120, rate_limit: 50, settings: { camelKey: 1 } });
    assert.equal(res.status, 200, res.text);
    for (const key of CONFIG_KEYS) assert.ok(key in res.body, key);
    assert.equal(res.body.queue_name, 'cfg-q');
    assert.equal(res.body.organization_id, server.organizationId);
    assert.deepEqual([res.body.max_retries, res.body.default_timeout, res.body.rate_limit, res.body.enabled], [7, 120, 50, true]);
    assert.deepEqual(res.body.settings, { camelKey: 1 });
    const update = await req('PUT', '/queues/cfg-q/config', { queue_name: 'cfg-q', max_retries: 2, backoff_base_ms: 10, backoff_max_ms: 100, backoff_jitter_ms: 0, concurrency_limit: 4 });
    assert.equal(update.body.id, res.body.id);
    assert.equal(update.body.max_retries, 2);
    assert.equal(update.body.default_timeout, 120, 'absent fields keep their value');
    assert.deepEqual([update.body.backoff_base_ms, update.body.backoff_max_ms, update.body.backoff_jitter_ms, update.body.concurrency_limit], [10, 100, 0, 4]);
    assert.equal((await req('GET', '/queues/cfg-q')).body.max_retries, 2);
    assert.equal((await req('PUT', '/queues/cfg-q/config', { max_retries: 3 })).body.concurrency_limit, 4, 'absent keeps the limit');
    assert.equal((await req('PUT', '/queues/cfg-q/config', { concurrency_limit: null })).body.concurrency_limit, null, 'null removes it');
  });

  it('rate_limit: set, cleared with null; a long-polling claim on a queue out of tokens is answered when tokens come', async () => {
    const set = await req('PUT', '/queues/rated-q/config', { rate_limit: 2, rate_limit_burst: 1 });
    assert.deepEqual([set.body.rate_limit, set.body.rate_limit_burst], [2, 1]);
    await enqueue(server, { queue_name: 'rated-q' });
    await enqueue(server, { queue_name: 'rated-q' });
    assert.equal((await claim(server, { queue_name: 'rated-q', limit: 5 })).length, 1, 'a burst of one');
    // No notification announces the next token (in 0.5 s at 2/s): the wait
    // must end by itself, long before wait_ms.
    const waited = await claim(server, { queue_name: 'rated-q', limit: 5, wait_ms: 20_000 });
    assert.equal(waited.length, 1);
    assert.equal((await req('PUT', '/queues/rated-q/config', { max_retries: 4 })).body.rate_limit, 2, 'absent keeps the limit');
    const cleared = await req('PUT', '/queues/rated-q/config', { rate_limit: null, rate_limit_burst: null });
    assert.deepEqual([cleared.body.rate_limit, cleared.body.rate_limit_burst], [null, null], 'null removes them');
  });

  it('concurrency keys: concurrency_key on single and bulk enqueue, concurrency_key_limit on the queue', async () => {
    const set = await req('PUT', '/queues/keyed-q/config', { concurrency_key_limit: 1 });
    assert.equal(set.body.concurrency_key_limit, 1);
    const single = await enqueue(server, { queue_name: 'keyed-q', concurrency_key: 'customer-1' });
    const bulk = await req('POST', '/jobs/bulk', { queue_name: 'keyed-q', jobs: [{ payload: {}, concurrency_key: 'customer-1' }, { payload: {}, concurrency_key: 'customer-2' }, { payload: {}, concurrency_key: '' }] });
    assert.equal(bulk.body.success_count, 2, bulk.text);
    assert.match(bulk.body.failed[0].error, /concurrency_key/);
    assert.equal((await req('GET', `/jobs/${single}`)).body.concurrency_key, 'customer-1');
    const claimed = await claim(server, { queue_name: 'keyed-q', limit: 10 });
    assert.deepEqual(claimed.map((job) => job.concurrency_key).sort(), ['customer-1', 'customer-2'], 'one job per key at a time');
    assertError(await req('POST', '/jobs', { queue_name: 'keyed-q', payload: {}, concurrency_key: 'k'.repeat(256) }), 400, 'VALIDATION_ERROR', /concurrency_key/);
    assertError(await req('PUT', '/queues/keyed-q/config', { concurrency_key_limit: 0 }), 400, 'VALIDATION_ERROR', /concurrency_key_limit/);
    assert.equal((await req('PUT', '/queues/keyed-q/config', { concurrency_key_limit: null })).body.concurrency_key_limit, null, 'null removes it');
  });

  it('fair share: fairness_key on enqueue, fairness and fairness_weights on the queue', async () => {
    const set = await req('PUT', '/queues/fair-q/config', { fairness: 'round_robin', fairness_weights: [{ key: 'vip', weight: 3 }, { key: 'acme', weight: 2 }] });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.fairness, 'round_robin');
    assert.deepEqual(set.body.fairness_weights, [{ key: 'acme', weight: 2 }, { key: 'vip', weight: 3 }]);
    for (let i = 0; i < 4; i++) await enqueue(server, { queue_name: 'fair-q', fairness_key: 'vip' });
    await enqueue(server, { queue_name: 'fair-q', fairness_key: 'other' });
    const bulk = await req('POST', '/jobs/bulk', { queue_name: 'fair-q', jobs: [{ payload: {}, fairness_key: 'other' }, { payload: {}, fairness_key: 'k'.repeat(256) }] });
    assert.equal(bulk.body.success_count, 1, bulk.text);
    assert.match(bulk.body.failed[0].error, /fairness_key/);
    const claimed = await claim(server, { queue_name: 'fair-q', limit: 4 });
    assert.deepEqual(claimed.map((job) => job.fairness_key).sort(), ['other', 'vip', 'vip', 'vip'], 'a turn: three jobs of the key of weight 3, one of the other');
    assertError(await req('PUT', '/queues/fair-q/config', { fairness: 'weighted' }), 400, 'VALIDATION_ERROR', /fairness/);
    assertError(await req('PUT', '/queues/fair-q/config', { fairness_weights: [{ key: 'a', weight: 1 }, { key: 'a', weight: 2 }] }), 400, 'VALIDATION_ERROR', /listed twice/);
    assertError(await req('PUT', '/queues/fair-q/config', { fairness_weights: [{ key: 'a', weight: 0 }] }), 400, 'VALIDATION_ERROR', /weight/);
    const odd = await req('PUT', '/queues/fair-q/config', { fairness_weights: [{ key: '__proto__', weight: 4 }, { key: 'constructor', weight: 2 }] });
    assert.deepEqual(odd.body.fairness_weights, [{ key: '__proto__', weight: 4 }, { key: 'constructor', weight: 2 }], 'keys that name Object properties are kept');
    const off = await req('PUT', '/queues/fair-q/config', { fairness: null, fairness_weights: null });
    assert.deepEqual([off.body.fairness, off.body.fairness_weights], [null, null]);
  });

  it('a queue\'s backoff settings drive the retry delay', async () => {
    await req('PUT', '/queues/fast-retry/config', { backoff_base_ms: 0, backoff_max_ms: 0, backoff_jitter_ms: 0 });
    const job = await enqueueAndClaim(server, 'fast-retry');
    await req('POST', `/jobs/${job.id}/fail`, { worker_id: 'w1', error: 'again' });
    const [again] = await claim(server, { queue_name: 'fast-retry' });
    assert.equal(again.id, job.id);
    assert.equal(again.retry_count, 1);
  });

  it('validates config bodies and queue names', async () => {
    assertError(await req('PUT', '/queues/v-q/config', { max_retries: 101 }), 400, 'VALIDATION_ERROR', /max_retries/);
    assertError(await req('PUT', '/queues/v-q/config', { default_timeout: 0 }), 400, 'VALIDATION_ERROR', /default_timeout/);
    assertError(await req('PUT', '/queues/v-q/config', { rate_limit: 'fast' }), 400, 'VALIDATION_ERROR', /rate_limit/);
    assertError(await req('PUT', '/queues/v-q/config', { rate_limit: 0 }), 400, 'VALIDATION_ERROR', /rate_limit/);
    assertError(await req('PUT', '/queues/v-q/config', { rate_limit_burst: 0 }), 400, 'VALIDATION_ERROR', /rate_limit_burst/);
    assertError(await req('PUT', '/queues/v-q/config', { rate_limit_burst: 100_001 }), 400, 'VALIDATION_ERROR', /rate_limit_burst/);
    assertError(await req('PUT', '/queues/v-q/config', { enabled: 'yes' }), 400, 'VALIDATION_ERROR', /enabled/);
    assertError(await req('PUT', '/queues/v-q/config', { backoff_jitter_ms: -1 }), 400, 'VALIDATION_ERROR', /backoff_jitter_ms/);
    assertError(await req('PUT', '/queues/.hidden/config', {}), 400, 'VALIDATION_ERROR', /name/);
    assert.equal((await empty('PUT', '/queues/v-q/config')).status, 200, 'an empty body creates a default config');
  });

  it('GET /queues lists configured queues by name as summaries; GET /queues/{name} is 404 without config', async () => {
    const other = await server.createOrganization();
    const h = (m: string, p: string, b?: unknown) => server.request(m, `/api/v1${p}`, { body: b, auth: other.apiKey });
    assert.deepEqual((await h('GET', '/queues')).body, []);
    await h('PUT', '/queues/zeta/config', { max_retries: 1 });
    await h('PUT', '/queues/alpha/config', {});
    const list = await h('GET', '/queues');
    assert.deepEqual(list.body.map((q: any) => q.queue_name), ['alpha', 'zeta']);
    assert.deepEqual(Object.keys(list.body[0]).sort(), ['default_timeout', 'enabled', 'max_retries', 'queue_name', 'rate_limit']);
    assertError(await h('GET', '/queues/unconfigured'), 404, 'NOT_FOUND');
    assertError(await h('GET', '/queues/!!bad!!'), 404, 'NOT_FOUND');
    assertError(await req('GET', '/queues/zeta'), 404, 'NOT_FOUND');
  });

  it('GET /queues/{name} of a queue with jobs but no config answers its defaults under a stable id, without creating a row', async () => {
    const other = await server.createOrganization();
    const h = (m: string, p: string, b?: unknown) => server.request(m, `/api/v1${p}`, { body: b, auth: other.apiKey });
    assert.equal((await h('POST', '/jobs', { queue_name: 'implicit-q', payload: {} })).status, 201);
    const first = await h('GET', '/queues/implicit-q');
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(
      { ...first.body, id: undefined, created_at: undefined, updated_at: undefined },
      { id: undefined, organization_id: other.organizationId, queue_name: 'implicit-q', max_retries: 3, default_timeout: 300, rate_limit: null, enabled: true, settings: {}, created_at: undefined, updated_at: undefined, paused_at: null, pause_reason: null, backoff_base_ms: 1000, backoff_max_ms: 60000, backoff_jitter_ms: 500, concurrency_limit: null, rate_limit_burst: null, concurrency_key_limit: null, fairness: null, fairness_weights: null, default_timeout_enforced: false, configured: false },
    );
    assert.match(first.body.id, /^[0-9a-f-]{36}$/);
    assert.equal((await h('GET', '/queues/implicit-q')).body.id, first.body.id, 'the same id on every read');
    assert.deepEqual((await h('GET', '/queues')).body, [], 'no config row was created');
    assert.equal((await h('GET', '/organizations/usage')).body.usage.queues.current, 0, 'it does not count against max_queues');
    assertError(await req('GET', '/queues/implicit-q'), 404, 'NOT_FOUND');
    const configured = await h('PUT', '/queues/implicit-q/config', { max_retries: 5 });
    assert.equal(configured.body.configured, true);
    assert.equal((await h('GET', '/queues/implicit-q')).body.max_retries, 5);
  });

  it('GET /queues/{name}/stats has the contract fields and works for unconfigured queues', async () => {
    const zeros = await req('GET', '/queues/never-used/stats');
    assert.equal(zeros.status, 200);
    assert.deepEqual(zeros.body, {
      queue_name: 'never-used', pending_jobs: 0, processing_jobs: 0, completed_jobs_24h: 0, failed_jobs_24h: 0,
      avg_processing_time_ms: null, max_job_age_seconds: null, active_workers: 0, scheduled_jobs: 0, deadletter_jobs_24h: 0, paused: false,
    });
    const done = await enqueueAndClaim(server, 'stats-q');
    await req('POST', `/jobs/${done.id}/complete`, { worker_id: 'w1' });
    const dead = await enqueueAndClaim(server, 'stats-q', { max_retries: 0 });
    await req('POST', `/jobs/${dead.id}/fail`, { worker_id: 'w1', error: 'x' });
    await enqueueAndClaim(server, 'stats-q');
    await enqueue(server, { queue_name: 'stats-q' });
    await enqueue(server, { queue_name: 'stats-q' });
    await req('POST', '/workers/register', { queue_name: 'stats-q', hostname: 'h' });
    const stats = (await req('GET', '/queues/stats-q/stats')).body;
    assert.deepEqual(
      [stats.pending_jobs, stats.processing_jobs, stats.completed_jobs_24h, stats.failed_jobs_24h, stats.deadletter_jobs_24h, stats.active_workers],
      [2, 1, 1, 1, 1, 1],
    );
    assert.equal(typeof stats.avg_processing_time_ms, 'number');
    assert.ok(Number.isInteger(stats.max_job_age_seconds));
  });

  it('pause (body optional) stops claims; resume reports the paused duration and 404s without config', async () => {
    await enqueue(server, { queue_name: 'pause-q' });
    const paused = await empty('POST', '/queues/pause-q/pause');
    assert.equal(paused.status, 200, paused.text);
    assert.equal(paused.body.queue_name, 'pause-q');
    assert.equal(paused.body.paused, true);
    assert.equal(paused.body.reason, null);
    assert.ok(Date.parse(paused.body.paused_at) > 0);
    const withReason = await req('POST', '/queues/pause-q/pause', { reason: 'deploy' });
    assert.equal(withReason.body.reason, 'deploy');
    assert.equal(withReason.body.paused_at, paused.body.paused_at, 'pausing again keeps the first paused_at');
    assert.deepEqual(await claim(server, { queue_name: 'pause-q' }), []);
    assert.equal((await req('GET', '/queues/pause-q')).body.enabled, false);
    assert.equal((await req('GET', '/queues/pause-q/stats')).body.paused, true);
    assertError(await req('POST', '/queues/pause-q/pause', { reason: 'r'.repeat(501) }), 400, 'VALIDATION_ERROR', /reason/);
    const resumed = await empty('POST', '/queues/pause-q/resume');
    assert.equal(resumed.status, 200);
    assert.equal(resumed.body.resumed, true);
    assert.ok(Number.isInteger(resumed.body.paused_duration_secs));
    assert.equal((await claim(server, { queue_name: 'pause-q' })).length, 1);
    assertError(await empty('POST', '/queues/no-config/resume'), 404, 'NOT_FOUND');
    assertError(await empty('POST', '/queues/%20bad/resume'), 404, 'NOT_FOUND');
  });

  it('DELETE /queues/{name}: 409 with pending or processing jobs, 404 without config, else 204', async () => {
    await req('PUT', '/queues/del-q/config', {});
    const id = await enqueue(server, { queue_name: 'del-q' });
    assertError(await req('DELETE', '/queues/del-q'), 409, 'CONFLICT');
    await req('DELETE', `/jobs/${id}`);
    const res = await req('DELETE', '/queues/del-q');
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    // The config is gone; the queue still has its (cancelled) job, so it reads as defaults.
    assert.equal((await req('GET', '/queues/del-q')).body.configured, false);
    assertError(await req('DELETE', '/queues/del-q'), 404, 'NOT_FOUND');
    assert.equal((await req('GET', `/jobs/${id}`)).status, 200, 'jobs are not deleted with the config');
  });

  it('refuses queue changes the API key may not make (403)', async () => {
    const key = await restrictedKey(server, ['mine']);
    assertError(await req('POST', '/queues/theirs/pause', {}, key), 403, 'ACCESS_DENIED');
    assertError(await req('PUT', '/queues/theirs/config', {}, key), 403, 'ACCESS_DENIED');
    assert.equal((await req('POST', '/queues/mine/pause', {}, key)).status, 200);
  });
});

describe('workers', () => {
  it('POST /workers/register answers 201 with a positive integer heartbeat interval', async () => {
    const res = await req('POST', '/workers/register', { queue_name: 'wq', hostname: 'box-1.local', worker_type: 'nodejs', max_concurrency: 5, metadata: { Region: 'eu' }, version: '1.0.40' });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ['heartbeat_interval_secs', 'id', 'lease_duration_secs', 'queue_name']);
    assert.equal(res.body.queue_name, 'wq');
    assert.equal(res.body.lease_duration_secs, 30);
    assert.ok(Number.isInteger(res.body.heartbeat_interval_secs) && res.body.heartbeat_interval_secs > 0);
    const worker = (await req('GET', `/workers/${res.body.id}`)).body;
    assert.deepEqual(Object.keys(worker).sort(), [
      'created_at', 'current_job_count', 'current_jobs', 'hostname', 'id', 'last_heartbeat', 'max_concurrency', 'max_concurrent_jobs', 'metadata',
      'organization_id', 'queue_name', 'queue_names', 'registered_at', 'status', 'updated_at', 'version', 'worker_type',
    ]);
    // The official Spooled dashboard reads these names for the same values.
    assert.deepEqual([worker.created_at, worker.max_concurrent_jobs, worker.current_job_count], [worker.registered_at, 5, 0]);
    assert.equal(worker.status, 'healthy');
    assert.deepEqual(worker.metadata, { Region: 'eu' });
    assert.equal(worker.version, '1.0.40');
  });

  it('validates registration', async () => {
    assertError(await req('POST', '/workers/register', { hostname: 'h' }), 400, 'VALIDATION_ERROR', /queue_name/);
    assertError(await req('POST', '/workers/register', { queue_name: 'wq' }), 400, 'VALIDATION_ERROR', /hostname/);
    assertError(await req('POST', '/workers/register', { queue_name: 'wq', hostname: 'bad host' }), 400, 'VALIDATION_ERROR', /hostname/);
    assertError(await req('POST', '/workers/register', { queue_name: 'wq', hostname: 'h'.repeat(256) }), 400, 'VALIDATION_ERROR', /hostname/);
    assertError(await req('POST', '/workers/register', { queue_name: 'wq', hostname: 'h', max_concurrency: 0 }), 400, 'VALIDATION_ERROR', /max_concurrency/);
    assertError(await req('POST', '/workers/register', { queue_name: 'wq', hostname: 'h', worker_type: 'x'.repeat(51) }), 400, 'VALIDATION_ERROR', /worker_type/);
    assertError(await req('POST', '/workers/register', { queue_name: 'wq', hostname: 'h', metadata: [] }), 400, 'VALIDATION_ERROR', /metadata/);
    const key = await restrictedKey(server, ['only-this']);
    assertError(await req('POST', '/workers/register', { queue_name: 'wq', hostname: 'h' }, key), 403, 'ACCESS_DENIED');
    assert.equal((await req('POST', '/workers/register', { queue_name: 'only-this', hostname: 'h' }, key)).status, 201);
  });

  it('GET /workers lists summaries, most recent heartbeat first; unknown ids are 404', async () => {
    const other = await server.createOrganization();
    const h = (m: string, p: string, b?: unknown) => server.request(m, `/api/v1${p}`, { body: b, auth: other.apiKey });
    const a = (await h('POST', '/workers/register', { queue_name: 'q', hostname: 'a' })).body.id;
    const b = (await h('POST', '/workers/register', { queue_name: 'q', hostname: 'b' })).body.id;
    await h('POST', `/workers/${a}/heartbeat`, { current_jobs: 2 });
    const list = (await h('GET', '/workers')).body;
    assert.deepEqual(list.map((w: any) => w.id), [a, b]);
    assert.deepEqual(Object.keys(list[0]).sort(), ['current_jobs', 'hostname', 'id', 'last_heartbeat', 'max_concurrency', 'queue_name', 'status']);
    assert.equal(list[0].current_jobs, 2);
    assertError(await h('GET', `/workers/${MISSING_ID}`), 404, 'NOT_FOUND');
    assertError(await h('GET', '/workers/zzz'), 404, 'NOT_FOUND');
    assertError(await req('GET', `/workers/${a}`), 404, 'NOT_FOUND');
  });

  it('POST /workers/{id}/heartbeat updates the worker; invalid status counts as healthy; unknown is 404', async () => {
    const id = (await req('POST', '/workers/register', { queue_name: 'wq', hostname: 'h' })).body.id;
    const res = await req('POST', `/workers/${id}/heartbeat`, { current_jobs: 3, status: 'degraded', metadata: { load: 1 } });
    assert.equal(res.status, 200);
    let worker = (await req('GET', `/workers/${id}`)).body;
    assert.deepEqual([worker.status, worker.current_jobs, worker.metadata], ['degraded', 3, { load: 1 }]);
    await req('POST', `/workers/${id}/heartbeat`, { current_jobs: 0, status: 'on-fire' });
    worker = (await req('GET', `/workers/${id}`)).body;
    assert.equal(worker.status, 'healthy');
    assert.equal((await empty('POST', `/workers/${id}/heartbeat`)).status, 200);
    assertError(await req('POST', `/workers/${id}/heartbeat`, { current_jobs: -1 }), 400, 'VALIDATION_ERROR', /current_jobs/);
    assertError(await req('POST', `/workers/${id}/heartbeat`, { current_jobs: 'many' }), 400, 'VALIDATION_ERROR', /current_jobs/);
    assertError(await req('POST', `/workers/${MISSING_ID}/heartbeat`, { current_jobs: 0 }), 404, 'NOT_FOUND');
    assertError(await req('POST', '/workers/nope/heartbeat', { current_jobs: 0 }), 404, 'NOT_FOUND');
  });

  it('POST /workers/{id}/deregister (no body): 204, offline, its processing jobs back to pending', async () => {
    const id = (await req('POST', '/workers/register', { queue_name: 'dereg-q', hostname: 'h' })).body.id;
    const job = await enqueueAndClaim(server, 'dereg-q', { max_retries: 3 }, id);
    const res = await empty('POST', `/workers/${id}/deregister`);
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    assert.equal((await req('GET', `/workers/${id}`)).body.status, 'offline');
    const released = (await req('GET', `/jobs/${job.id}`)).body;
    assert.deepEqual([released.status, released.retry_count, released.lease_id, released.assigned_worker_id], ['pending', 0, null, null]);
    assertError(await empty('POST', `/workers/${MISSING_ID}/deregister`), 404, 'NOT_FOUND');
    assertError(await empty('POST', '/workers/x/deregister'), 404, 'NOT_FOUND');
  });
});
