/**
 * job_key policies (extension; docs/jobs-api.md, "Job keys"): dedupe,
 * debounce, throttle and replace over REST, single and bulk, with the
 * answer's key_outcome, the history of changed jobs, validation, and 50
 * concurrent callers per mode that must leave one standing job.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { assertError, claim } from './jobs-helpers.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('jobkeys');
});
after(async () => server?.close());

const req = (method: string, path: string, body?: unknown) => server.request(method, `/api/v1${path}`, { body });
const create = (body: Record<string, unknown>) => req('POST', '/jobs', { payload: {}, ...body });
const job = async (id: string) => (await req('GET', `/jobs/${id}`)).body;
const jobsOfKey = async (queue: string, key: string) =>
  (await server.spool.db.query<{ id: string; status: string; payload: any; scheduled_at: Date | null; created_at: Date }>(
    'SELECT id::text, status, payload, scheduled_at, created_at FROM spool.jobs WHERE queue_name = $1 AND job_key = $2 ORDER BY created_at', [queue, key])).rows;

describe('job_key: dedupe', () => {
  it('returns the waiting or running job of the key, and creates again once it has ended', async () => {
    const key = { key: 'user-1', mode: 'dedupe' };
    const first = await create({ queue_name: 'kd', job_key: key, payload: { n: 1 } });
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(first.body, { id: first.body.id, created: true, key_outcome: 'created' });
    const again = await create({ queue_name: 'kd', job_key: key, payload: { n: 2 } });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, { id: first.body.id, created: false, key_outcome: 'deduplicated' });
    assert.deepEqual((await job(first.body.id)).payload, { n: 1 }, 'dedupe leaves the standing job as it was');

    const other = await create({ queue_name: 'kd-other', job_key: key });
    assert.equal(other.body.key_outcome, 'created', 'a key is per queue');

    const [claimed] = await claim(server, { queue_name: 'kd' });
    assert.equal(claimed.id, first.body.id);
    const whileRunning = await create({ queue_name: 'kd', job_key: key });
    assert.equal(whileRunning.body.key_outcome, 'deduplicated', 'a running job stands for its key');
    assert.equal(whileRunning.body.id, first.body.id);

    await req('POST', `/jobs/${claimed.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id });
    const after = await create({ queue_name: 'kd', job_key: key });
    assert.equal(after.status, 201);
    assert.notEqual(after.body.id, first.body.id, 'an ended job no longer stands for the key');
    const shown = await job(after.body.id);
    assert.equal(shown.job_key, 'user-1');
    assert.equal(shown.job_key_mode, 'dedupe');
  });

  it('checks the idempotency key first', async () => {
    const a = await create({ queue_name: 'ki', idempotency_key: 'idem-1', job_key: { key: 'k1', mode: 'dedupe' } });
    const b = await create({ queue_name: 'ki', idempotency_key: 'idem-1', job_key: { key: 'k2', mode: 'dedupe' } });
    assert.equal(b.body.id, a.body.id);
    assert.equal(b.body.key_outcome, 'deduplicated');
    assert.equal((await jobsOfKey('ki', 'k2')).length, 0, 'the idempotency hit created nothing for the other key');
  });
});

describe('job_key with idempotency_key: a repeat of an answered request is not decided afresh', () => {
  const finish = async (queue: string, id: string) => {
    await server.spool.db.query("UPDATE spool.jobs SET status = 'pending', scheduled_at = now() WHERE id = $1 AND status = 'scheduled'", [id]);
    const [claimed] = await claim(server, { queue_name: queue });
    assert.equal(claimed?.id, id);
    assert.equal((await req('POST', `/jobs/${id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id })).status, 200);
  };

  for (const [mode, outcome] of [['dedupe', 'deduplicated'], ['debounce', 'debounced'], ['throttle', 'throttled'], ['replace', 'replaced']] as const) {
    it(`${mode}: the idempotency key names the job it was answered with, also after that job has ended`, async () => {
      const queue = `kir-${mode}`;
      const jobKey = mode === 'debounce' || mode === 'throttle' ? { key: 'k', mode, window_secs: 60 } : { key: 'k', mode };
      const standing = await create({ queue_name: queue, job_key: jobKey, payload: { n: 0 } });
      assert.equal(standing.body.key_outcome, 'created');
      const request = { queue_name: queue, job_key: jobKey, idempotency_key: `${queue}-request`, payload: { n: 1 } };
      const answered = await create(request);
      assert.deepEqual(answered.body, { id: standing.body.id, created: false, key_outcome: outcome });

      await finish(queue, standing.body.id);
      // A throttle window that has passed would let the request through, were it decided again.
      await server.spool.db.query("UPDATE spool.jobs SET created_at = created_at - interval '61 seconds' WHERE id = $1", [standing.body.id]);
      const repeated = await create(request);
      assert.equal(repeated.status, 200, repeated.text);
      assert.deepEqual(repeated.body, { id: standing.body.id, created: false, key_outcome: 'deduplicated' });
      assert.equal((await jobsOfKey(queue, 'k')).length, 1, 'the repeat created nothing');
      assert.equal((await create({ ...request, idempotency_key: `${queue}-other` })).body.key_outcome, 'created', 'another request is decided by the key');
    });
  }

  it('the answer goes with its job: once the job is deleted, the key is decided afresh', async () => {
    const queue = 'kir-gone';
    const jobKey = { key: 'k', mode: 'dedupe' };
    const standing = await create({ queue_name: queue, job_key: jobKey, max_retries: 0 });
    const request = { queue_name: queue, job_key: jobKey, idempotency_key: 'kir-gone-request' };
    assert.equal((await create(request)).body.id, standing.body.id);
    const [claimed] = await claim(server, { queue_name: queue });
    await req('POST', `/jobs/${claimed.id}/fail`, { worker_id: 'w1', lease_id: claimed.lease_id, error: 'boom' });
    assert.equal((await create(request)).body.id, standing.body.id, 'a dead-lettered job still answers');
    const answers = async () => (await server.spool.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM spool.job_key_answers WHERE idempotency_key = 'kir-gone-request'")).rows[0]!.n;
    assert.equal(await answers(), 1);
    assert.deepEqual((await req('POST', '/jobs/dlq/purge', { queue_name: queue, confirm: true })).body, { purged_count: 1 });
    assert.equal(await answers(), 0, 'the purge deleted the answer with the job');
    const afresh = await create(request);
    assert.equal(afresh.status, 201, afresh.text);
    assert.equal(afresh.body.key_outcome, 'created');
  });
});

describe('job_key: debounce', () => {
  it('keeps one waiting job with the latest payload, run window_secs after the latest enqueue, capped by max_wait_secs', async () => {
    const key = { key: 'doc-7', mode: 'debounce', window_secs: 60, max_wait_secs: 90 };
    const first = await create({ queue_name: 'kb', job_key: key, payload: { v: 1 } });
    assert.equal(first.status, 201, first.text);
    const created = await job(first.body.id);
    assert.equal(created.status, 'scheduled', 'a debounced job waits for its window (trailing edge)');
    const firstRun = Date.parse(created.scheduled_at);
    assert.ok(Math.abs(firstRun - (Date.parse(created.created_at) + 60_000)) < 2_000, `${created.scheduled_at} vs ${created.created_at}`);

    // Age the series by 45 s: the next enqueue's window would end at +105 s, past max_wait (+90 s).
    await server.spool.db.query("UPDATE spool.jobs SET created_at = created_at - interval '45 seconds' WHERE id = $1", [first.body.id]);
    const second = await create({ queue_name: 'kb', job_key: key, payload: { v: 2 } });
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.body, { id: first.body.id, created: false, key_outcome: 'debounced' });
    const debounced = await job(first.body.id);
    assert.deepEqual(debounced.payload, { v: 2 });
    const capped = Date.parse(debounced.created_at) + 90_000;
    assert.ok(Math.abs(Date.parse(debounced.scheduled_at) - capped) < 2_000, `run time capped at the first enqueue + max_wait: ${debounced.scheduled_at}`);
    const events = ((await req('GET', `/jobs/${first.body.id}/history`)).body as any[]).map((e) => e.event);
    assert.ok(events.includes('debounce'), `history: ${events}`);
    assert.equal((await jobsOfKey('kb', 'doc-7')).length, 1);
    const explained = (await req('GET', `/jobs/${first.body.id}/explain`)).body;
    assert.deepEqual(explained.reasons.filter((r: any) => r.blocking).map((r: any) => [r.code, r.until, r.job_key]), [['debounced', debounced.scheduled_at, 'doc-7']], JSON.stringify(explained));
  });

  it('starts a new series when the standing job is already running', async () => {
    const key = { key: 'doc-r', mode: 'debounce', window_secs: 1 };
    const first = await create({ queue_name: 'kbr', job_key: key });
    await server.spool.db.query("UPDATE spool.jobs SET status = 'pending', scheduled_at = now() WHERE id = $1", [first.body.id]);
    const [claimed] = await claim(server, { queue_name: 'kbr' });
    assert.equal(claimed.id, first.body.id);
    const next = await create({ queue_name: 'kbr', job_key: key, payload: { v: 2 } });
    assert.equal(next.status, 201);
    assert.equal(next.body.key_outcome, 'created');
    assert.equal((await job(next.body.id)).status, 'scheduled');
  });

  it('refuses scheduled_at with debounce, and window_secs where it does not apply', async () => {
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'debounce', window_secs: 5 }, scheduled_at: new Date(Date.now() + 60_000).toISOString() }), 400, 'VALIDATION_ERROR', /scheduled_at/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'debounce' } }), 400, 'VALIDATION_ERROR', /job_key\.window_secs is required/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'throttle' } }), 400, 'VALIDATION_ERROR', /job_key\.window_secs is required/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'dedupe', window_secs: 5 } }), 400, 'VALIDATION_ERROR', /window_secs applies/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'throttle', window_secs: 5, max_wait_secs: 9 } }), 400, 'VALIDATION_ERROR', /max_wait_secs applies/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'debounce', window_secs: 50, max_wait_secs: 9 } }), 400, 'VALIDATION_ERROR', /at least window_secs/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'later' } }), 400, 'VALIDATION_ERROR', /^job_key\.mode must be one of dedupe, debounce, throttle, replace$/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a' } }), 400, 'VALIDATION_ERROR', /^job_key\.mode is required$/);
    assertError(await create({ queue_name: 'kv', job_key: { key: '', mode: 'dedupe' } }), 400, 'VALIDATION_ERROR', /^job_key\.key must NOT have fewer than 1 characters$/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'x'.repeat(256), mode: 'dedupe' } }), 400, 'VALIDATION_ERROR', /^job_key\.key must NOT have more than 255 characters$/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'dedupe', extra: 1 } }), 400, 'VALIDATION_ERROR', /^job_key\.extra is not allowed here$/);
    assertError(await create({ queue_name: 'kv', job_key: 'a' }), 400, 'VALIDATION_ERROR', /^job_key must be object$/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'throttle', window_secs: 0 } }), 400, 'VALIDATION_ERROR', /^job_key\.window_secs must be >= 1$/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'throttle', window_secs: 2_592_001 } }), 400, 'VALIDATION_ERROR', /^job_key\.window_secs must be <= 2592000$/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'throttle', window_secs: 1.5 } }), 400, 'VALIDATION_ERROR', /^job_key\.window_secs must be integer$/);
    assertError(await create({ queue_name: 'kv', job_key: { key: 'a', mode: 'debounce', window_secs: 5, max_wait_secs: 2_592_001 } }), 400, 'VALIDATION_ERROR', /^job_key\.max_wait_secs must be <= 2592000$/);
    assert.equal((await server.spool.db.query("SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = 'kv'")).rows[0].n, 0, 'nothing was created');
  });
});

describe('job_key: throttle', () => {
  it('lets one job per window through, whatever became of it, and drops the rest with the standing id', async () => {
    const key = { key: 'report', mode: 'throttle', window_secs: 60 };
    const first = await create({ queue_name: 'kt', job_key: key });
    assert.equal(first.status, 201);
    assert.equal((await job(first.body.id)).status, 'pending', 'throttle runs the first at once (leading edge)');
    const [claimed] = await claim(server, { queue_name: 'kt' });
    await req('POST', `/jobs/${claimed.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id });
    const dropped = await create({ queue_name: 'kt', job_key: key });
    assert.equal(dropped.status, 200);
    assert.deepEqual(dropped.body, { id: first.body.id, created: false, key_outcome: 'throttled' });
    await server.spool.db.query("UPDATE spool.jobs SET created_at = created_at - interval '61 seconds' WHERE id = $1", [first.body.id]);
    const next = await create({ queue_name: 'kt', job_key: key });
    assert.equal(next.body.key_outcome, 'created', 'the window slides from the standing job\'s creation');
  });
});

describe('job_key: replace', () => {
  it('gives a waiting job the new payload and options, and queues a new job after a running one', async () => {
    const key = { key: 'sync', mode: 'replace' };
    const first = await create({ queue_name: 'kr', job_key: key, payload: { v: 1 }, priority: 5, tags: { a: 1 } });
    const replaced = await create({ queue_name: 'kr', job_key: key, payload: { v: 2 }, max_retries: 7 });
    assert.deepEqual(replaced.body, { id: first.body.id, created: false, key_outcome: 'replaced' });
    const shown = await job(first.body.id);
    assert.deepEqual(shown.payload, { v: 2 });
    assert.equal(shown.priority, 0, 'options are the new enqueue\'s, with their defaults');
    assert.equal(shown.max_retries, 7);
    assert.equal(shown.tags, null);

    const [claimed] = await claim(server, { queue_name: 'kr' });
    assert.equal(claimed.id, first.body.id);
    const after = await create({ queue_name: 'kr', job_key: key, payload: { v: 3 } });
    assert.equal(after.status, 201);
    assert.equal(after.body.key_outcome, 'created');
    assert.deepEqual(await claim(server, { queue_name: 'kr' }), [], 'the new job waits for the running one');
    await req('POST', `/jobs/${claimed.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id });
    const [next] = await claim(server, { queue_name: 'kr' });
    assert.equal(next?.id, after.body.id, 'it runs once the running job has ended');
    assert.deepEqual(next.payload, { v: 3 });
  });
});

describe('job_key: replace after a running job that fails', () => {
  it('the queued job runs once the running one has dead-lettered', async () => {
    const key = { key: 'sync-f', mode: 'replace' };
    const first = await create({ queue_name: 'krf', job_key: key, max_retries: 0 });
    const [claimed] = await claim(server, { queue_name: 'krf' });
    assert.equal(claimed.id, first.body.id);
    const after = await create({ queue_name: 'krf', job_key: key, payload: { v: 2 } });
    assert.equal(after.body.key_outcome, 'created');
    assert.deepEqual(await claim(server, { queue_name: 'krf' }), []);
    await req('POST', `/jobs/${claimed.id}/fail`, { worker_id: 'w1', lease_id: claimed.lease_id, error: 'boom' });
    assert.equal((await job(claimed.id)).status, 'deadletter');
    const [next] = await claim(server, { queue_name: 'krf' });
    assert.equal(next?.id, after.body.id, 'on_parent_failure continue: it runs after a failure too');
  });
});

describe('job_key in bulk', () => {
  it('applies items of one key in order and answers each with its outcome', async () => {
    const res = await req('POST', '/jobs/bulk', {
      queue_name: 'kbulk',
      jobs: [
        { payload: { i: 0 }, job_key: { key: 'a', mode: 'dedupe' } },
        { payload: { i: 1 }, job_key: { key: 'a', mode: 'dedupe' } },
        { payload: { i: 2 }, job_key: { key: 'b', mode: 'debounce', window_secs: 30 } },
        { payload: { i: 3 }, job_key: { key: 'b', mode: 'debounce', window_secs: 30 } },
        { payload: { i: 4 } },
        { payload: { i: 5 }, job_key: { key: 'c', mode: 'throttle', window_secs: 30 } },
        { payload: { i: 6 }, job_key: { key: 'c', mode: 'throttle', window_secs: 30 } },
        { payload: { i: 7 }, job_key: { key: 'd', mode: 'dedupe', window_secs: 3 } },
        { payload: { i: 8 }, job_key: { key: 'e', mode: 'sometimes' } },
      ],
    });
    assert.equal(res.status, 200, res.text);
    const s = res.body.succeeded;
    assert.deepEqual(s.map((r: any) => r.key_outcome ?? null), ['created', 'deduplicated', 'created', 'debounced', null, 'created', 'throttled']);
    assert.equal(s[1].job_id, s[0].job_id);
    assert.equal(s[3].job_id, s[2].job_id);
    assert.equal(s[6].job_id, s[5].job_id);
    assert.deepEqual(s.map((r: any) => r.created), [true, false, true, false, true, true, false]);
    assert.equal(res.body.failed.length, 2);
    assert.match(res.body.failed[0].error, /jobs\[7\]\.job_key\.window_secs applies/);
    assert.equal(res.body.failed[1].error, 'jobs[8].job_key.mode must be one of dedupe, debounce, throttle, replace');
    assert.deepEqual((await job(s[2].job_id)).payload, { i: 3 }, 'the later item of a debounced key wins');
  });
});

describe('job_key under concurrent enqueues', () => {
  for (const mode of ['dedupe', 'debounce', 'throttle', 'replace'] as const) {
    it(`${mode}: 50 concurrent callers leave one job and all name it`, async () => {
      const queue = `kc-${mode}`;
      const jobKey = mode === 'debounce' || mode === 'throttle' ? { key: 'hot', mode, window_secs: 60 } : { key: 'hot', mode };
      const answers = await Promise.all(Array.from({ length: 50 }, (_, n) => create({ queue_name: queue, job_key: jobKey, payload: { n } })));
      for (const a of answers) assert.ok(a.status === 200 || a.status === 201, a.text);
      const jobs = await jobsOfKey(queue, 'hot');
      assert.equal(jobs.length, 1, `${mode}: ${jobs.length} jobs`);
      assert.deepEqual(new Set(answers.map((a) => a.body.id)), new Set([jobs[0]!.id]));
      assert.equal(answers.filter((a) => a.body.key_outcome === 'created').length, 1);
      const expected = { dedupe: 'deduplicated', debounce: 'debounced', throttle: 'throttled', replace: 'replaced' }[mode];
      assert.equal(answers.filter((a) => a.body.key_outcome === expected).length, 49);
    });
  }

  // Bulk requests do not share a group commit: each is a transaction of its own, so here the keys' locks alone keep them apart.
  for (const mode of ['dedupe', 'debounce', 'throttle', 'replace'] as const) {
    it(`${mode}: 50 concurrent bulk requests, two items of each of two keys apiece, leave one job per key that every item names`, async () => {
      const queue = `kcb-${mode}`;
      const jobKey = (key: string) => (mode === 'debounce' || mode === 'throttle' ? { key, mode, window_secs: 60 } : { key, mode });
      const answers = await Promise.all(Array.from({ length: 50 }, (_, n) => req('POST', '/jobs/bulk', {
        queue_name: queue,
        jobs: [
          { payload: { n, i: 0 }, job_key: jobKey('a') },
          { payload: { n, i: 1 }, job_key: jobKey('b') },
          { payload: { n, i: 2 }, job_key: jobKey('b') },
          { payload: { n, i: 3 }, job_key: jobKey('a') },
        ],
      })));
      for (const a of answers) {
        assert.equal(a.status, 200, a.text);
        assert.equal(a.body.failed.length, 0, a.text);
      }
      const items = answers.flatMap((a) => a.body.succeeded as { index: number; job_id: string; created: boolean; key_outcome: string }[]);
      assert.equal(items.length, 200);
      const expected = { dedupe: 'deduplicated', debounce: 'debounced', throttle: 'throttled', replace: 'replaced' }[mode];
      for (const [key, indexes] of [['a', [0, 3]], ['b', [1, 2]]] as const) {
        const jobs = await jobsOfKey(queue, key);
        assert.equal(jobs.length, 1, `${mode}, key ${key}: ${jobs.length} jobs`);
        const ofKey = items.filter((item) => (indexes as readonly number[]).includes(item.index));
        assert.deepEqual(new Set(ofKey.map((item) => item.job_id)), new Set([jobs[0]!.id]), `every item of key ${key} names its job`);
        assert.equal(ofKey.filter((item) => item.key_outcome === 'created' && item.created).length, 1);
        assert.equal(ofKey.filter((item) => item.key_outcome === expected && !item.created).length, 99);
      }
    });
  }
});
