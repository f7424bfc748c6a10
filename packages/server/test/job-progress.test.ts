import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { JOB_LOG_LIMITS, JobRetention } from '@spool/engine';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { openSse, type SseClient } from '../../../test-support/sse.js';
import { MISSING_ID, assertError, enqueueAndClaim, restrictedKey } from './jobs-helpers.js';

let server: TestServer;
const open: SseClient[] = [];
before(async () => {
  server = await startTestServer('jobprogress');
});
after(async () => {
  for (const client of open) client.close();
  await server.close();
});

const post = (path: string, body?: unknown, auth?: string) => server.request('POST', `/api/v1${path}`, { body, auth });
const get = (path: string, auth?: string) => server.request('GET', `/api/v1${path}`, { auth });
let n = 0;
const unique = (prefix: string) => `${prefix}-${++n}`;

async function held(prefix: string): Promise<{ id: string; lease_id: string; queue_name: string }> {
  return enqueueAndClaim(server, unique(prefix));
}

describe('POST /api/v1/jobs/{id}/progress', () => {
  it('records progress; omitted fields keep their value, null clears; GET /jobs/{id}/progress reads it', async () => {
    const job = await held('prog');
    assert.deepEqual((await get(`/jobs/${job.id}/progress`)).body, { job_id: job.id, progress: null });
    const first = await post(`/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: job.lease_id, percent: 12.5, message: 'resizing', metadata: { frames: 3 } });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.success, true);
    assert.equal(first.body.progress.percent, 12.5);
    const second = await post(`/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: job.lease_id, percent: 50, metadata: null });
    assert.equal(second.status, 200, second.text);
    const read = (await get(`/jobs/${job.id}/progress`)).body;
    assert.equal(read.job_id, job.id);
    assert.equal(read.progress.percent, 50);
    assert.equal(read.progress.message, 'resizing', 'an omitted message is kept');
    assert.equal(read.progress.metadata, null, 'null clears');
    assert.ok(Date.parse(read.progress.updated_at) > 0);
    // The job row itself is not rewritten by progress.
    const job2 = (await get(`/jobs/${job.id}`)).body;
    assert.equal(job2.status, 'processing');
  });

  it('is fenced like heartbeat: another worker 404, a stale lease 409 LEASE_EXPIRED, a finished job refused', async () => {
    const job = await held('fence');
    const wrong = await post(`/jobs/${job.id}/progress`, { worker_id: 'intruder', percent: 1 });
    assert.equal(wrong.status, 404, wrong.text);
    assert.equal(wrong.body.error, 'job_not_found_or_not_owned');
    assertError(await post(`/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: MISSING_ID, percent: 1 }), 409, 'LEASE_EXPIRED');
    assertError(await post(`/jobs/${job.id}/logs`, { worker_id: 'w1', lease_id: MISSING_ID, lines: ['x'] }), 409, 'LEASE_EXPIRED');
    assert.equal((await post(`/jobs/${job.id}/logs`, { worker_id: 'intruder', lines: ['x'] })).status, 404);
    assert.equal((await post(`/jobs/${MISSING_ID}/logs`, { worker_id: 'w1', lines: ['x'] })).status, 404);
    assert.equal((await post(`/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: job.lease_id })).status, 200);
    // As with heartbeat: the finished job's old lease is a stale one (409), and without a lease the job is not owned (404).
    assertError(await post(`/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: job.lease_id, percent: 100 }), 409, 'LEASE_EXPIRED');
    assert.equal((await post(`/jobs/${job.id}/progress`, { worker_id: 'w1', percent: 100 })).status, 404);
    assert.deepEqual((await get(`/jobs/${job.id}/progress`)).body.progress, null, 'nothing refused was stored');
    assert.deepEqual((await get(`/jobs/${job.id}/logs`)).body.lines, []);
  });

  it('refuses out-of-bounds input with a 4xx naming the limit', async () => {
    const job = await held('bounds');
    const base = { worker_id: 'w1', lease_id: job.lease_id };
    assertError(await post(`/jobs/${job.id}/progress`, { ...base, percent: 101 }), 400, 'VALIDATION_ERROR', /percent/);
    assertError(await post(`/jobs/${job.id}/progress`, { ...base, percent: -1 }), 400, 'VALIDATION_ERROR', /percent/);
    assertError(await post(`/jobs/${job.id}/progress`, { ...base, message: 'm'.repeat(1001) }), 400, 'VALIDATION_ERROR', /message/);
    assertError(await post(`/jobs/${job.id}/progress`, base), 400, 'VALIDATION_ERROR', /percent, message or metadata/);
    const big = await post(`/jobs/${job.id}/progress`, { ...base, metadata: { blob: 'x'.repeat(JOB_LOG_LIMITS.metadataBytes) } });
    assertError(big, 413, 'PAYLOAD_TOO_LARGE', /metadata exceeds 16384 bytes/);
    assert.equal(big.body.details.limit, 16384);
    assertError(await post(`/jobs/${job.id}/logs`, { ...base, lines: [] }), 400, 'VALIDATION_ERROR', /lines/);
    assertError(await post(`/jobs/${job.id}/logs`, { ...base, lines: Array(101).fill('x') }), 400, 'VALIDATION_ERROR', /lines/);
    assertError(await post(`/jobs/${job.id}/logs`, { ...base, lines: ['x'.repeat(4097)] }), 400, 'VALIDATION_ERROR', /lines/);
    assertError(await post(`/jobs/${job.id}/logs`, { ...base, lines: [42] }), 400, 'VALIDATION_ERROR', /lines/);
  });
});

describe('POST /api/v1/jobs/{id}/logs', () => {
  it('appends lines in order; GET /jobs/{id}/logs reads them after a seq', async () => {
    const job = await held('logs');
    const base = { worker_id: 'w1', lease_id: job.lease_id };
    const first = await post(`/jobs/${job.id}/logs`, { ...base, lines: ['one', 'two'] });
    assert.deepEqual(first.body, { success: true, written: 2, dropped: 0 });
    await post(`/jobs/${job.id}/logs`, { ...base, lines: ['three', ''] });
    const all = (await get(`/jobs/${job.id}/logs`)).body;
    assert.equal(all.job_id, job.id);
    assert.deepEqual(all.lines.map((l: { line: string }) => l.line), ['one', 'two', 'three', '']);
    const seqs = all.lines.map((l: { seq: number }) => l.seq);
    assert.deepEqual([...seqs].sort((a, b) => a - b), seqs);
    const rest = (await get(`/jobs/${job.id}/logs?after=${seqs[1]}&limit=1`)).body;
    assert.deepEqual(rest.lines.map((l: { line: string }) => l.line), ['three']);
    assertError(await get(`/jobs/${MISSING_ID}/logs`), 404, 'NOT_FOUND');
  });

  it(`keeps the newest ${JOB_LOG_LIMITS.linesPerJob} lines of a job, dropping the oldest`, async () => {
    const job = await held('cap-lines');
    const base = { worker_id: 'w1', lease_id: job.lease_id };
    let dropped = 0;
    for (let batch = 0; batch < 11; batch++) {
      const res = await post(`/jobs/${job.id}/logs`, { ...base, lines: Array.from({ length: 100 }, (_, i) => `line ${batch * 100 + i}`) });
      assert.equal(res.status, 200, res.text);
      dropped += res.body.dropped;
    }
    assert.equal(dropped, 100);
    const lines = (await get(`/jobs/${job.id}/logs`)).body.lines.map((l: { line: string }) => l.line);
    assert.equal(lines.length, 1000);
    assert.equal(lines[0], 'line 100');
    assert.equal(lines.at(-1), 'line 1099');
  });

  it(`keeps at most ${JOB_LOG_LIMITS.bytesPerJob} bytes of lines per job`, async () => {
    const job = await held('cap-bytes');
    const base = { worker_id: 'w1', lease_id: job.lease_id };
    // 4 KiB lines: 64 fit in 256 KiB; send 100.
    const res = await post(`/jobs/${job.id}/logs`, { ...base, lines: Array.from({ length: 100 }, (_, i) => `${String(i).padStart(3, '0')}${'x'.repeat(4093)}`) });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { success: true, written: 64, dropped: 36 });
    const lines = (await get(`/jobs/${job.id}/logs`)).body.lines.map((l: { line: string }) => l.line.slice(0, 3));
    assert.equal(lines[0], '036', 'the oldest of the batch did not fit');
    assert.equal(lines.at(-1), '099');
    const more = await post(`/jobs/${job.id}/logs`, { ...base, lines: ['y'.repeat(4096)] });
    assert.deepEqual(more.body, { success: true, written: 1, dropped: 1 });
  });
});

describe('progress and logs: realtime, scope and pruning', () => {
  it('announces job.progress and job.log on the organization stream and the queue stream', async () => {
    const queue = unique('rt');
    const client = await openSse(`${server.url}/api/v1/events`, { authorization: `Bearer ${server.apiKey}` });
    open.push(client);
    const queueClient = await openSse(`${server.url}/api/v1/events/queues/${queue}?events=job.log`, { authorization: `Bearer ${server.apiKey}` });
    open.push(queueClient);
    const job = await enqueueAndClaim(server, queue);
    await post(`/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: job.lease_id, percent: 40, message: 'halfway-ish' });
    await post(`/jobs/${job.id}/logs`, { worker_id: 'w1', lease_id: job.lease_id, lines: ['hello', 'world'] });
    const progress = await client.waitFor((e) => e.data.type === 'job.progress' && e.data.data.job_id === job.id);
    assert.equal(progress.data.data.queue_name, queue);
    assert.equal(progress.data.data.percent, 40);
    assert.equal(progress.data.data.message, 'halfway-ish');
    assert.ok(progress.data.data.timestamp);
    const log = await client.waitFor((e) => e.data.type === 'job.log' && e.data.data.job_id === job.id);
    assert.deepEqual(log.data.data.lines, ['hello', 'world']);
    assert.equal(log.data.data.queue_name, queue);
    const queued = await queueClient.waitFor((e) => e.data.type === 'job.log' && e.data.data.job_id === job.id);
    assert.deepEqual(queued.data.data.lines, ['hello', 'world']);
  });

  it("hides another queue's job from a queue-scoped key: 404 on every route, no events", async () => {
    const key = await restrictedKey(server, ['mine-*']);
    const job = await held('theirs');
    const client = await openSse(`${server.url}/api/v1/events`, { authorization: `Bearer ${key}` });
    open.push(client);
    for (const res of [
      await post(`/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: job.lease_id, percent: 5 }, key),
      await post(`/jobs/${job.id}/logs`, { worker_id: 'w1', lease_id: job.lease_id, lines: ['x'] }, key),
      await get(`/jobs/${job.id}/progress`, key),
      await get(`/jobs/${job.id}/logs`, key),
    ]) assertError(res, 404, 'NOT_FOUND');
    assert.deepEqual((await get(`/jobs/${job.id}/progress`)).body.progress, null, 'the refused update was not stored');
    // The owner's update is announced, but not to the scoped key; its own queue's is.
    await post(`/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: job.lease_id, percent: 6 });
    const mine = await enqueueAndClaim(server, 'mine-1');
    await post(`/jobs/${mine.id}/progress`, { worker_id: 'w1', lease_id: mine.lease_id, percent: 7 }, key);
    await client.waitFor((e) => e.data.type === 'job.progress' && e.data.data.job_id === mine.id);
    assert.equal(client.events.filter((e) => e.data.data?.job_id === job.id).length, 0);
  });

  it('deletes the progress and log lines of a job retention deletes', async () => {
    const job = await held('prune');
    const keep = await held('prune-keep');
    for (const j of [job, keep]) {
      await post(`/jobs/${j.id}/progress`, { worker_id: 'w1', lease_id: j.lease_id, percent: 100 });
      await post(`/jobs/${j.id}/logs`, { worker_id: 'w1', lease_id: j.lease_id, lines: ['done'] });
      assert.equal((await post(`/jobs/${j.id}/complete`, { worker_id: 'w1', lease_id: j.lease_id })).status, 200);
    }
    await server.database.pool.query(`UPDATE spool.jobs SET created_at = now() - interval '9 days', completed_at = now() - interval '8 days',
      purge_on = spool.retention_purge_day(now() - interval '8 days', 7) WHERE id = $1`, [job.id]);
    await new JobRetention(server.spool.db).runOnce();
    assertError(await get(`/jobs/${job.id}`), 404, 'NOT_FOUND');
    const rows = async (table: string, id: string) => (await server.database.pool.query(`SELECT 1 FROM spool.${table} WHERE job_id = $1`, [id])).rowCount;
    assert.equal(await rows('job_progress', job.id), 0);
    assert.equal(await rows('job_logs', job.id), 0);
    assert.equal(await rows('job_progress', keep.id), 1, 'a kept job keeps its progress');
    assert.equal(await rows('job_logs', keep.id), 1);
  });

  it('deletes the progress and log lines of dead letters purged', async () => {
    const job = await enqueueAndClaim(server, unique('purge'), { max_retries: 0 });
    await post(`/jobs/${job.id}/logs`, { worker_id: 'w1', lease_id: job.lease_id, lines: ['about to fail'] });
    await post(`/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: job.lease_id, percent: 3 });
    assert.equal((await post(`/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: job.lease_id, error: 'boom' })).status, 200);
    const purged = await post('/jobs/dlq/purge', { queue_name: job.queue_name, confirm: true });
    assert.equal(purged.status, 200, purged.text);
    const count = async (table: string) => (await server.database.pool.query(`SELECT 1 FROM spool.${table} WHERE job_id = $1`, [job.id])).rowCount;
    assert.equal(await count('job_progress'), 0);
    assert.equal(await count('job_logs'), 0);
  });
});
