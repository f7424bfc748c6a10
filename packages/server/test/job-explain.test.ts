/**
 * GET /jobs/{id}/explain over REST: one scenario per reason code, each on
 * its own queue, set up only through the API (queue config, enqueue, claim,
 * fail), plus its reach (404s like GET /jobs/{id}).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { MISSING_ID, claim, enqueue, enqueueAndClaim, restrictedKey } from './jobs-helpers.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('jobexplain');
});
after(async () => server.close());

const req = (method: string, path: string, body?: unknown, auth?: string) => server.request(method, `/api/v1${path}`, { body, auth });

interface Reason { code: string; message: string; blocking: boolean; until?: string; [detail: string]: unknown }
interface Explanation { job_id: string; queue_name: string; status: string; runnable: boolean; reasons: Reason[]; checked_at: string }

async function explain(id: string, auth?: string): Promise<Explanation> {
  const res = await req('GET', `/jobs/${id}/explain`, undefined, auth);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** The reason with `code`; fails listing the reasons there are instead. */
function reason(e: Explanation, code: string): Reason {
  const found = e.reasons.find((r) => r.code === code);
  assert.ok(found, `no ${code} reason in ${JSON.stringify(e.reasons)}`);
  return found;
}

const codes = (e: Explanation) => e.reasons.map((r) => r.code);
/** Codes of the reasons that block a claim. */
const blockers = (e: Explanation) => e.reasons.filter((r) => r.blocking).map((r) => r.code);

/** A live worker on `queue`, so no_live_workers stays out of the way. */
async function liveWorker(queue: string): Promise<void> {
  const res = await req('POST', '/workers/register', { queue_name: queue, hostname: `explain-${queue}` });
  assert.equal(res.status, 201, res.text);
}

describe('GET /jobs/{id}/explain', () => {
  it('queue_paused: names the pause time and reason and how to resume; resumed, the job is runnable and next in line', async () => {
    const queue = 'explain-paused';
    await liveWorker(queue);
    const id = await enqueue(server, { queue_name: queue });
    const paused = await req('POST', `/queues/${queue}/pause`, { reason: 'deploying v2' });
    assert.equal(paused.status, 200, paused.text);
    const e = await explain(id);
    assert.deepEqual([e.job_id, e.queue_name, e.status, e.runnable], [id, queue, 'pending', false]);
    assert.deepEqual(blockers(e), ['queue_paused']);
    const r = reason(e, 'queue_paused');
    assert.equal(r.paused_at, paused.body.paused_at);
    assert.equal(r.pause_reason, 'deploying v2');
    assert.match(r.message, /Queue "explain-paused" is paused since .*deploying v2.*POST \/api\/v1\/queues\/explain-paused\/resume/);

    assert.equal((await req('POST', `/queues/${queue}/resume`)).status, 200);
    const resumed = await explain(id);
    assert.equal(resumed.runnable, true);
    assert.deepEqual(codes(resumed), ['queued_behind']);
    assert.equal(reason(resumed, 'queued_behind').ahead, 0);
    assert.equal(reason(resumed, 'queued_behind').blocking, false);
  });

  it('scheduled: until is the scheduled time', async () => {
    const queue = 'explain-scheduled';
    await liveWorker(queue);
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const id = await enqueue(server, { queue_name: queue, scheduled_at: at });
    const e = await explain(id);
    assert.deepEqual([e.status, e.runnable], ['scheduled', false]);
    assert.deepEqual(codes(e), ['scheduled']);
    assert.equal(Date.parse(reason(e, 'scheduled').until!), Date.parse(at));
  });

  it('in_backoff: a failed attempt waits until its scheduled_at, with its retry count and error', async () => {
    const queue = 'explain-backoff';
    await liveWorker(queue);
    await req('PUT', `/queues/${queue}/config`, { backoff_base_ms: 3_600_000, backoff_max_ms: 3_600_000, backoff_jitter_ms: 0 });
    const job = await enqueueAndClaim(server, queue, { max_retries: 3 });
    const failed = await req('POST', `/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: job.lease_id, error: 'upstream 503' });
    assert.equal(failed.status, 200, failed.text);
    const row = (await req('GET', `/jobs/${job.id}`)).body;
    const e = await explain(job.id);
    assert.deepEqual([e.status, e.runnable, codes(e)], ['pending', false, ['in_backoff']]);
    const r = reason(e, 'in_backoff');
    assert.equal(r.until, row.scheduled_at);
    assert.equal(r.retry_count, 1);
    assert.equal(r.last_error, 'upstream 503');
    assert.match(r.message, /upstream 503/);
  });

  it('rate_limited: an empty bucket gives until for the next token; explaining never takes a token', async () => {
    const queue = 'explain-rated';
    await liveWorker(queue);
    await req('PUT', `/queues/${queue}/config`, { rate_limit: 1, rate_limit_burst: 1 });
    const target = await enqueue(server, { queue_name: queue, priority: -10 });
    for (let i = 0; i < 10; i++) await enqueue(server, { queue_name: queue });
    const bucket = async () => (await server.spool.db.query(
      'SELECT rate_tokens, rate_refilled_at FROM spool.queue_config WHERE organization_id = $1 AND queue_name = $2', [server.organizationId, queue])).rows[0];
    // Each claim takes the only token (and a filler job ahead of the target);
    // the bucket is then empty until a second has passed, whenever that is.
    let limited: Explanation | null = null;
    for (let attempt = 0; attempt < 10 && !limited; attempt++) {
      const jobs = await claim(server, { queue_name: queue });
      assert.ok(jobs.length <= 1);
      assert.notEqual(jobs[0]?.id, target);
      const before = await bucket();
      const e = await explain(target);
      assert.deepEqual(await bucket(), before, 'the bucket is not written');
      if (codes(e).includes('rate_limited')) limited = e;
    }
    assert.ok(limited, 'the bucket was never seen empty');
    assert.equal(limited.runnable, false);
    const r = reason(limited, 'rate_limited');
    assert.deepEqual([r.rate_limit, r.burst], [1, 1]);
    const wait = Date.parse(r.until!) - Date.parse(limited.checked_at);
    assert.ok(wait > 0 && wait <= 1000, `one token at 1/s comes within a second (${wait} ms)`);
    assert.match(r.message, /PUT \/api\/v1\/queues\/explain-rated\/config/);
  });

  it('concurrency_limit: the queue has as many processing jobs as its limit', async () => {
    const queue = 'explain-capped';
    await liveWorker(queue);
    await req('PUT', `/queues/${queue}/config`, { concurrency_limit: 1 });
    await enqueueAndClaim(server, queue);
    const waiting = await enqueue(server, { queue_name: queue });
    const e = await explain(waiting);
    assert.deepEqual([e.runnable, blockers(e)], [false, ['concurrency_limit']]);
    const r = reason(e, 'concurrency_limit');
    assert.deepEqual([r.limit, r.running], [1, 1]);
    assert.deepEqual(await claim(server, { queue_name: queue }), [], 'the claim agrees');
  });

  it('concurrency_key_full: the key and its running count; a job of another key is runnable', async () => {
    const queue = 'explain-keyed';
    await liveWorker(queue);
    await req('PUT', `/queues/${queue}/config`, { concurrency_key_limit: 1 });
    await enqueueAndClaim(server, queue, { concurrency_key: 'tenant-a' });
    const sameKey = await enqueue(server, { queue_name: queue, concurrency_key: 'tenant-a' });
    const otherKey = await enqueue(server, { queue_name: queue, concurrency_key: 'tenant-b' });
    const e = await explain(sameKey);
    assert.deepEqual([e.runnable, blockers(e)], [false, ['concurrency_key_full']]);
    const r = reason(e, 'concurrency_key_full');
    assert.deepEqual([r.concurrency_key, r.running, r.limit], ['tenant-a', 1, 1]);
    const other = await explain(otherKey);
    assert.equal(other.runnable, true);
    assert.equal(reason(other, 'queued_behind').ahead, 1, 'the blocked tenant-a job is still ahead in claim order');
  });

  it('dependencies_pending: lists the dependencies not completed; a key of the dependent\'s queue alone sees them unnamed', async () => {
    await liveWorker('explain-deps');
    const parent = await enqueue(server, { queue_name: 'explain-deps-parent' });
    const child = await enqueue(server, { queue_name: 'explain-deps' });
    const added = await req('POST', `/jobs/${child}/dependencies`, { depends_on_job_ids: [parent] });
    assert.equal(added.status, 200, added.text);
    const e = await explain(child);
    assert.deepEqual([e.runnable, blockers(e)], [false, ['dependencies_pending']]);
    const r = reason(e, 'dependencies_pending');
    assert.deepEqual(r.dependencies, [{ job_id: parent, status: 'pending' }]);
    assert.match(r.message, new RegExp(parent));

    const scoped = await explain(child, await restrictedKey(server, ['explain-deps']));
    const hidden = reason(scoped, 'dependencies_pending');
    assert.deepEqual([hidden.dependencies, hidden.waiting_count], [[], 1]);
    assert.doesNotMatch(hidden.message, new RegExp(parent));
  });

  it('blocked_by_failed_dependency: a dead-lettered dependency, with how to retry it', async () => {
    const queue = 'explain-deadep';
    await liveWorker(queue);
    const parent = await enqueue(server, { queue_name: queue, max_retries: 0 });
    const child = await enqueue(server, { queue_name: queue });
    assert.equal((await req('POST', `/jobs/${child}/dependencies`, { depends_on_job_ids: [parent] })).status, 200);
    const [claimed] = await claim(server, { queue_name: queue });
    assert.equal(claimed.id, parent);
    assert.equal((await req('POST', `/jobs/${parent}/fail`, { worker_id: 'w1', lease_id: claimed.lease_id, error: 'boom' })).body.status, 'deadletter');
    const e = await explain(child);
    assert.deepEqual([e.runnable, blockers(e)], [false, ['blocked_by_failed_dependency']]);
    const r = reason(e, 'blocked_by_failed_dependency');
    assert.deepEqual(r.dependencies, [{ job_id: parent, status: 'deadletter' }]);
    assert.match(r.message, new RegExp(`POST /api/v1/jobs/${parent}/retry`));
  });

  it('expired: expires_at passed, before or after the expirer cancelled it', async () => {
    const queue = 'explain-expired';
    await liveWorker(queue);
    const id = await enqueue(server, { queue_name: queue, expires_at: new Date(Date.now() - 60_000).toISOString() });
    const e = await explain(id);
    assert.ok(['pending', 'cancelled'].includes(e.status), e.status);
    assert.equal(e.runnable, false);
    assert.deepEqual(blockers(e), ['expired']);
    assert.deepEqual(await claim(server, { queue_name: queue }), [], 'the claim agrees');
  });

  it('no_live_workers: a hint, not a blocker; gone once a worker registers for the queue', async () => {
    const queue = 'explain-noworkers';
    const id = await enqueue(server, { queue_name: queue });
    const e = await explain(id);
    assert.equal(e.runnable, true);
    assert.deepEqual(codes(e), ['no_live_workers', 'queued_behind']);
    assert.equal(reason(e, 'no_live_workers').blocking, false);
    assert.match(reason(e, 'no_live_workers').message, /POST \/api\/v1\/workers\/register/);
    // A worker serving the queue among its further queues counts too.
    assert.equal((await req('POST', '/workers/register', { queue_name: 'explain-elsewhere', queue_names: [queue], hostname: 'h-noworkers' })).status, 201);
    assert.deepEqual(codes(await explain(id)), ['queued_behind']);
  });

  it('leased: the worker and the end of its lease', async () => {
    const queue = 'explain-leased';
    const job = await enqueueAndClaim(server, queue, {}, 'encoder-7');
    const e = await explain(job.id);
    assert.deepEqual([e.status, e.runnable, codes(e)], ['processing', false, ['leased']]);
    const r = reason(e, 'leased');
    assert.deepEqual([r.worker_id, r.until], ['encoder-7', job.lease_expires_at]);
  });

  it('queued_behind: counts the claimable jobs ahead in claim order (priority, then age)', async () => {
    const queue = 'explain-line';
    await liveWorker(queue);
    const first = await enqueue(server, { queue_name: queue });
    await enqueue(server, { queue_name: queue });
    const third = await enqueue(server, { queue_name: queue });
    await enqueue(server, { queue_name: queue, scheduled_at: new Date(Date.now() + 3_600_000).toISOString() });
    const ahead = async (id: string) => reason(await explain(id), 'queued_behind').ahead;
    assert.equal(await ahead(first), 0);
    assert.equal(await ahead(third), 2);
    const urgent = await enqueue(server, { queue_name: queue, priority: 50 });
    assert.equal(await ahead(third), 3, 'a later job of higher priority goes ahead; a scheduled one does not count');
    assert.equal(await ahead(urgent), 0);
    assert.equal((await claim(server, { queue_name: queue }))[0].id, urgent, 'the claim takes the one said to be next');
  });

  it('queued_behind in a fair queue: counts by turns across keys, not oldest first, and says it is an estimate', async () => {
    const queue = 'explain-fair';
    await liveWorker(queue);
    assert.equal((await req('PUT', `/queues/${queue}/config`, { fairness: 'round_robin' })).status, 200);
    for (let offset = 0; offset < 1000; offset += 100) {
      const res = await req('POST', '/jobs/bulk', { queue_name: queue, jobs: Array.from({ length: 100 }, (_, i) => ({ payload: { i: offset + i }, fairness_key: 'a' })) });
      assert.ok(res.status < 300, res.text);
    }
    const bs: string[] = [];
    for (let i = 0; i < 3; i++) bs.push(await enqueue(server, { queue_name: queue, fairness_key: 'b' }));
    const unkeyed = await enqueue(server, { queue_name: queue });
    const lastB = reason(await explain(bs[2]!), 'queued_behind');
    // Turns alternate a, b: a1 b1 a2 b2 a3 b3. Oldest first it would be 1,002.
    assert.equal(lastB.ahead, 5, lastB.message);
    assert.match(lastB.message, /about 5 jobs are ahead .*an estimate/);
    assert.equal(reason(await explain(bs[0]!), 'queued_behind').ahead, 1, 'the first job of b goes after the first of a');
    assert.equal(reason(await explain(unkeyed), 'queued_behind').ahead, 1003, 'a job without a key waits for every keyed job of its priority');
    const taken = (await claim(server, { queue_name: queue, limit: 6 })).map((job) => job.id);
    assert.ok(taken.includes(bs[2]!), 'a claim of ahead + 1 jobs takes it');
    assert.equal(taken.filter((id) => bs.includes(id)).length, 3);
  });

  it('finished states: completed, dead-lettered (with its error and how to retry), cancelled', async () => {
    const queue = 'explain-final';
    const done = await enqueueAndClaim(server, queue);
    assert.equal((await req('POST', `/jobs/${done.id}/complete`, { worker_id: 'w1', lease_id: done.lease_id })).status, 200);
    const completed = await explain(done.id);
    assert.deepEqual([completed.status, completed.runnable, codes(completed)], ['completed', false, ['finished']]);

    const dead = await enqueueAndClaim(server, queue, { max_retries: 0 });
    await req('POST', `/jobs/${dead.id}/fail`, { worker_id: 'w1', lease_id: dead.lease_id, error: 'card declined' });
    const dl = await explain(dead.id);
    assert.deepEqual([dl.status, dl.runnable, codes(dl)], ['deadletter', false, ['dead_lettered']]);
    assert.equal(reason(dl, 'dead_lettered').last_error, 'card declined');
    assert.match(reason(dl, 'dead_lettered').message, new RegExp(`POST /api/v1/jobs/${dead.id}/retry.*/api/v1/jobs/dlq/retry`));

    const cancelledId = await enqueue(server, { queue_name: queue });
    assert.equal((await req('DELETE', `/jobs/${cancelledId}`)).status, 204);
    const cancelled = await explain(cancelledId);
    assert.deepEqual([cancelled.status, cancelled.runnable, codes(cancelled)], ['cancelled', false, ['cancelled']]);
  });

  it('is in the OpenAPI document with its reason codes', async () => {
    const docs = await server.request('GET', '/docs/json', { auth: null });
    assert.equal(docs.status, 200);
    const op = docs.body.paths['/api/v1/jobs/{id}/explain']?.get;
    assert.ok(op, Object.keys(docs.body.paths).filter((p: string) => p.includes('/jobs/')).join(', '));
    const schema = JSON.stringify(op.responses['200']);
    for (const code of ['queue_paused', 'rate_limited', 'blocked_by_failed_dependency', 'queued_behind']) assert.ok(schema.includes(code), code);
  });

  it('answers 404 for unknown ids, malformed ids and other organizations\' jobs', async () => {
    const id = await enqueue(server, { queue_name: 'explain-404' });
    const other = await server.createOrganization();
    for (const [path, auth] of [[`/jobs/${MISSING_ID}/explain`, undefined], ['/jobs/not-a-uuid/explain', undefined], [`/jobs/${id}/explain`, other.apiKey]] as const) {
      const res = await req('GET', path, undefined, auth);
      assert.equal(res.status, 404, `${path}: ${res.text}`);
      assert.equal(res.body.code, 'NOT_FOUND');
    }
  });

  it('a key of other queues gets what GET /jobs/{id} gives it (404); a key of the job\'s queue reads it', async () => {
    const id = await enqueue(server, { queue_name: 'explain-scope' });
    const elsewhere = await restrictedKey(server, ['explain-other-*']);
    const get = await req('GET', `/jobs/${id}`, undefined, elsewhere);
    const res = await req('GET', `/jobs/${id}/explain`, undefined, elsewhere);
    assert.equal(get.status, 404);
    assert.equal(res.status, get.status, res.text);
    assert.equal((await explain(id, await restrictedKey(server, ['explain-scope']))).job_id, id);
  });
});
