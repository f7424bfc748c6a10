import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { openSse, type SseClient } from '../../../test-support/sse.js';
import { MISSING_ID, assertError, claim, enqueueAndClaim, restrictedKey } from './jobs-helpers.js';

let server: TestServer;
const streams: SseClient[] = [];
before(async () => {
  server = await startTestServer('jobsnooze');
});
after(async () => {
  for (const stream of streams) stream.close();
  await server.close();
});

const post = (path: string, body?: unknown, auth?: string) => server.request('POST', `/api/v1${path}`, { body, auth });
const getJob = async (id: string) => (await server.request('GET', `/api/v1/jobs/${id}`)).body;

describe('POST /api/v1/jobs/{id}/snooze', () => {
  it('puts the job off without using an attempt, and the stream shows it', async () => {
    const queue = 'snooze-rest';
    const events = await openSse(`${server.url}/api/v1/events/queues/${queue}`, { authorization: `Bearer ${server.apiKey}` });
    streams.push(events);
    const job = await enqueueAndClaim(server, queue, { max_retries: 2 });
    const res = await post(`/jobs/${job.id}/snooze`, { worker_id: 'w1', lease_id: job.lease_id, delay_secs: 120 });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.success, true);
    assert.equal(res.body.status, 'pending');
    assert.equal(res.body.retry_count, 0);
    const wakeMs = Date.parse(res.body.scheduled_at) - Date.now();
    assert.ok(wakeMs > 60_000 && wakeMs <= 121_000, `wakes in ${wakeMs} ms`);

    const stored = await getJob(job.id);
    assert.equal(stored.status, 'pending');
    assert.equal(stored.retry_count, 0);
    assert.equal(stored.assigned_worker_id, null);
    assert.equal(stored.lease_id, null);
    assert.deepEqual(await claim(server, { queue_name: queue, worker_id: 'w2' }), [], 'not claimable while snoozed');

    const history = (await server.request('GET', `/api/v1/jobs/${job.id}/history`)).body as { event: string; to_status: string | null }[];
    assert.deepEqual(history.at(-1) && [history.at(-1)!.event, history.at(-1)!.to_status], ['snooze', 'pending']);

    const snoozed = await events.waitFor((e) => e.data.type === 'job.snoozed' && e.data.data?.job_id === job.id, 10_000);
    assert.equal(snoozed.data.data.worker_id, 'w1');
    assert.equal(snoozed.data.data.scheduled_at, res.body.scheduled_at);
    assert.equal(snoozed.data.data.retry_count, 0);
    await events.waitFor((e) => e.data.type === 'JobStatusChange' && e.data.data?.job_id === job.id
      && e.data.data.old_status === 'processing' && e.data.data.new_status === 'pending', 10_000);
    assert.equal(events.events.some((e) => e.data.type === 'JobFailed' && e.data.data?.job_id === job.id), false, 'a snooze is no failure');
  });

  it('answers 404 job_not_found_or_not_owned for another worker, unknown and malformed ids, and for a queue out of the key\'s reach', async () => {
    const job = await enqueueAndClaim(server, 'snooze-404');
    for (const [id, worker] of [[job.id, 'intruder'], [MISSING_ID, 'w1'], ['not-a-uuid', 'w1']] as const) {
      const res = await post(`/jobs/${id}/snooze`, { worker_id: worker, delay_secs: 5 });
      assertError(res, 404, 'NOT_FOUND');
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, 'job_not_found_or_not_owned');
    }
    const key = await restrictedKey(server, ['allowed-*']);
    const outOfReach = await post(`/jobs/${job.id}/snooze`, { worker_id: 'w1', delay_secs: 5 }, key);
    assert.equal(outOfReach.status, 404);
    assert.equal((await getJob(job.id)).status, 'processing');
  });

  it('answers 409 LEASE_EXPIRED for a stale lease', async () => {
    const job = await enqueueAndClaim(server, 'snooze-409');
    assertError(await post(`/jobs/${job.id}/snooze`, { worker_id: 'w1', lease_id: MISSING_ID, delay_secs: 5 }), 409, 'LEASE_EXPIRED');
    assert.equal((await getJob(job.id)).status, 'processing');
    assert.equal((await post(`/jobs/${job.id}/snooze`, { worker_id: 'w1', lease_id: job.lease_id, delay_secs: 5 })).status, 200);
    assertError(await post(`/jobs/${job.id}/snooze`, { worker_id: 'w1', lease_id: job.lease_id, delay_secs: 5 }), 409, 'LEASE_EXPIRED');
  });

  it('is refused after an enforced timeout\'s deadline like the completion', async () => {
    const job = await enqueueAndClaim(server, 'snooze-deadline', { timeout_seconds: 60 });
    const moved = await server.database.pool.query(
      `UPDATE spool.jobs SET deadline_at = now() - interval '1 second', lease_expires_at = now() - interval '1 second' WHERE id = $1`, [job.id]);
    assert.equal(moved.rowCount, 1);
    const withLease = await post(`/jobs/${job.id}/snooze`, { worker_id: 'w1', lease_id: job.lease_id, delay_secs: 5 });
    assertError(withLease, 409, 'LEASE_EXPIRED');
    assert.equal(withLease.body.details.timed_out, true);
    const without = await post(`/jobs/${job.id}/snooze`, { worker_id: 'w1', delay_secs: 5 });
    if (without.status === 404) assert.equal(without.body.error, 'job_not_found_or_not_owned');
    else assert.fail(`expected 404, got ${without.status}`);
    const stored = await getJob(job.id);
    assert.notEqual(stored.status === 'pending' && stored.retry_count === 0, true, 'not snoozed: the attempt timed out');
  });

  it('ends a job cancelled when a cancel was requested while it ran', async () => {
    const job = await enqueueAndClaim(server, 'snooze-cancel');
    assert.equal((await server.request('DELETE', `/api/v1/jobs/${job.id}`)).status, 409, 'cancel of a running job is requested');
    const res = await post(`/jobs/${job.id}/snooze`, { worker_id: 'w1', lease_id: job.lease_id, delay_secs: 30 });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true, status: 'cancelled', scheduled_at: null, retry_count: 0 });
    assert.equal((await getJob(job.id)).status, 'cancelled');
  });

  it('validates the body with 400s naming the field', async () => {
    const job = await enqueueAndClaim(server, 'snooze-400');
    const path = `/jobs/${job.id}/snooze`;
    assertError(await post(path, { worker_id: 'w1' }), 400, 'VALIDATION_ERROR', /delay_secs/);
    assertError(await post(path, { worker_id: 'w1', delay_secs: 0 }), 400, 'VALIDATION_ERROR', /delay_secs/);
    assertError(await post(path, { worker_id: 'w1', delay_secs: 86_401 }), 400, 'VALIDATION_ERROR', /delay_secs/);
    assertError(await post(path, { worker_id: 'w1', delay_secs: 1.5 }), 400, 'VALIDATION_ERROR', /delay_secs/);
    assertError(await post(path, { worker_id: 'w1', delay_secs: '5' }), 400, 'VALIDATION_ERROR', /delay_secs/);
    assertError(await post(path, { delay_secs: 5 }), 400, 'VALIDATION_ERROR', /worker_id/);
    assert.equal((await getJob(job.id)).status, 'processing');
    assert.equal((await post(path, { worker_id: 'w1', delay_secs: 86_400 })).status, 200, 'a day is allowed');
  });
});
