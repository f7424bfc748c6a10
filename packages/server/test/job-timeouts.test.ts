import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { LIMITS } from '@spool/protocol';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient, type GrpcTestClient } from '../../../test-support/grpc.js';
import { openSse, type SseClient } from '../../../test-support/sse.js';
import { assertError, claim, enqueue, enqueueAndClaim } from './jobs-helpers.js';

let server: TestServer;
let client: GrpcTestClient;
const streams: SseClient[] = [];
before(async () => {
  server = await startTestServer('jobtimeouts', { grpcPort: 0 });
  client = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
});
after(async () => {
  for (const stream of streams) stream.close();
  client.close();
  await server.close();
});

const post = (path: string, body?: unknown) => server.request('POST', `/api/v1${path}`, { body });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` returns a value, for at most 20 s (the leader's reaper runs every second). */
async function waitFor<T>(what: string, check: () => Promise<T | null | undefined>): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await check();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Moves a processing job's deadline and lease into the past, as if its timeout had run out. */
async function passDeadline(id: string): Promise<void> {
  const result = await server.database.pool.query(
    `UPDATE spool.jobs SET deadline_at = now() - interval '1 second', lease_expires_at = now() - interval '1 second'
     WHERE id = $1 AND status = 'processing' AND deadline_at IS NOT NULL`, [id]);
  assert.equal(result.rowCount, 1, 'deadline moved into the past');
}

const getJob = async (id: string) => (await server.request('GET', `/api/v1/jobs/${id}`)).body;

describe('REST: a job with an enforced timeout', () => {
  it('is claimed with its deadline, heartbeats up to it, and is then refused and failed as timed out', async () => {
    const queue = 'to-rest';
    const events = await openSse(`${server.url}/api/v1/events/queues/${queue}?events=job.timed_out`, { authorization: `Bearer ${server.apiKey}` });
    streams.push(events);
    const job = await enqueueAndClaim(server, queue, { timeout_seconds: LIMITS.timeoutSecondsMin, max_retries: 1 });
    assert.equal(job.timeout_enforced, true);
    assert.ok(job.deadline_at, 'the claim answers the deadline');
    assert.ok(Date.parse(job.lease_expires_at) <= Date.parse(job.deadline_at), 'the lease stops at the deadline');

    const refused = await waitFor('a refused heartbeat', async () => {
      const res = await post(`/jobs/${job.id}/heartbeat`, { worker_id: 'w1', lease_id: job.lease_id, lease_duration_secs: 30 });
      if (res.status === 200) {
        assert.equal(res.body.deadline_at, job.deadline_at);
        assert.equal(res.body.timed_out, false);
        assert.ok(Date.parse(res.body.lease_expires_at) <= Date.parse(job.deadline_at), 'never past the deadline');
        return null;
      }
      return res;
    });
    assertError(refused, 409, 'LEASE_EXPIRED', /timed out/);
    assert.deepEqual(refused.body.details, { job_id: job.id, timed_out: true });

    const failed = await waitFor('the reaper to fail the attempt', async () => {
      const row = await getJob(job.id);
      return row.status === 'processing' ? null : row;
    });
    assert.equal(failed.status, 'pending');
    assert.equal(failed.retry_count, 1);
    assert.match(failed.last_error, new RegExp(`^Timed out after ${LIMITS.timeoutSecondsMin} s`));
    assert.equal(failed.deadline_at, null, 'no attempt running');

    const told = await events.waitFor((e) => e.data.type === 'job.timed_out', 10_000);
    assert.equal(told.data.data.job_id, job.id);
    assert.equal(told.data.data.worker_id, 'w1');
    assert.equal(told.data.data.will_retry, true);
    assert.equal(told.data.data.new_status, 'pending');

    // After the reaper: the same answers to the attempt's worker.
    const complete = await post(`/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: job.lease_id, result: { late: true } });
    assertError(complete, 409, 'LEASE_EXPIRED', /timed out/);
    assert.equal(complete.body.details.timed_out, true);
    const beat = await post(`/jobs/${job.id}/heartbeat`, { worker_id: 'w1', lease_id: job.lease_id });
    assertError(beat, 409, 'LEASE_EXPIRED');
    assertError(await post(`/jobs/${job.id}/complete`, { worker_id: 'w1' }), 404, 'NOT_FOUND');
    assert.equal((await getJob(job.id)).status, 'pending', 'the late completion changed nothing');
  });

  it('refuses a completion after the deadline with 409 given the lease, else 404, and never completes the job', async () => {
    const queue = 'to-rest-late';
    const job = await enqueueAndClaim(server, queue, { timeout_seconds: 60, max_retries: 0 });
    await passDeadline(job.id);
    const withLease = await post(`/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: job.lease_id, result: 1 });
    assertError(withLease, 409, 'LEASE_EXPIRED', /timed out/);
    assert.equal(withLease.body.details.timed_out, true);
    assertError(await post(`/jobs/${job.id}/complete`, { worker_id: 'w1', result: 1 }), 404, 'NOT_FOUND');
    assertError(await post(`/jobs/${job.id}/heartbeat`, { worker_id: 'w1' }), 404, 'NOT_FOUND');
    assertError(await post(`/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: job.lease_id, error: 'late' }), 409, 'LEASE_EXPIRED');
    const batch = await post('/jobs/complete', { worker_id: 'w1', items: [{ job_id: job.id, lease_id: job.lease_id }] });
    assert.equal(batch.status, 200);
    assert.deepEqual(batch.body.results, [{ job_id: job.id, success: false, error: 'lease_expired' }]);
    const ended = await waitFor('the reaper to dead-letter it', async () => {
      const row = await getJob(job.id);
      return row.status === 'processing' ? null : row;
    });
    assert.equal(ended.status, 'deadletter');
    assert.match(ended.last_error, /^Timed out after 60 s/);
    const history: { event: string }[] = (await server.request('GET', `/api/v1/jobs/${job.id}/history`)).body;
    assert.deepEqual(history.map((h) => h.event), ['create', 'claim', 'timeout']);
  });
});

describe('REST: a job with the built-in default timeout', () => {
  it('is not enforced: no deadline on the claim or the heartbeat', async () => {
    const job = await enqueueAndClaim(server, 'to-rest-builtin');
    assert.equal(job.timeout_seconds, LIMITS.timeoutSecondsDefault);
    assert.equal(job.timeout_enforced, false);
    assert.equal(job.deadline_at, null);
    const beat = await post(`/jobs/${job.id}/heartbeat`, { worker_id: 'w1', lease_id: job.lease_id, lease_duration_secs: 600 });
    assert.equal(beat.status, 200, beat.text);
    assert.equal(beat.body.deadline_at, null);
    assert.ok(Date.parse(beat.body.lease_expires_at) - Date.now() > 500_000, 'extended as asked');
  });

  it('becomes enforced through the queue config, and unenforced again with default_timeout: null', async () => {
    const queue = 'to-rest-config';
    const made = await server.request('PUT', `/api/v1/queues/${queue}/config`, { body: { max_retries: 4 } });
    assert.equal(made.status, 200, made.text);
    assert.equal(made.body.default_timeout_enforced, false);
    const set = await server.request('PUT', `/api/v1/queues/${queue}/config`, { body: { default_timeout: 120 } });
    assert.equal(set.body.default_timeout_enforced, true);
    const id = await enqueue(server, { queue_name: queue });
    const [claimed] = await claim(server, { queue_name: queue });
    assert.equal(claimed.id, id);
    assert.equal(claimed.timeout_seconds, 120);
    assert.equal(claimed.timeout_enforced, true);
    assert.ok(Math.abs(Date.parse(claimed.deadline_at) - Date.parse(claimed.started_at) - 120_000) < 1_000);
    const reset = await server.request('PUT', `/api/v1/queues/${queue}/config`, { body: { default_timeout: null } });
    assert.equal(reset.body.default_timeout, LIMITS.timeoutSecondsDefault);
    assert.equal(reset.body.default_timeout_enforced, false);
    assertError(await server.request('PUT', `/api/v1/queues/${queue}/config`, { body: { default_timeout: 0 } }), 400, 'VALIDATION_ERROR', /default_timeout/);
  });
});

describe('gRPC: an attempt past its deadline', () => {
  it('RenewLease answers OK with success:false, Complete FAILED_PRECONDITION with the lease, NOT_FOUND without', async () => {
    const queueName = `to-grpc-${randomUUID().slice(0, 8)}`;
    const { jobId } = await client.call('queue', 'Enqueue', { queueName, timeoutSeconds: 60 });
    const { jobs } = await client.call('queue', 'Dequeue', { queueName, workerId: 'gw', leaseDurationSecs: 30 });
    assert.equal(jobs.length, 1);
    const leaseId = jobs[0].leaseId;
    const renewed = await client.call('queue', 'RenewLease', { jobId, workerId: 'gw', leaseId, extensionSecs: 30 });
    assert.equal(renewed.success, true, 'before the deadline');
    await passDeadline(jobId);
    assert.deepEqual(await client.call('queue', 'RenewLease', { jobId, workerId: 'gw', leaseId, extensionSecs: 30 }), { success: false, newExpiresAt: null });
    assert.equal((await client.call('queue', 'RenewLease', { jobId, workerId: 'gw', extensionSecs: 30 })).success, false);
    await assert.rejects(client.call('queue', 'Complete', { jobId, workerId: 'gw', leaseId }), (err: { code: number; details: string }) => {
      assert.equal(err.code, status.FAILED_PRECONDITION, err.details);
      assert.match(err.details, /timed out/);
      return true;
    });
    await assert.rejects(client.call('queue', 'Complete', { jobId, workerId: 'gw' }), (err: { code: number }) => err.code === status.NOT_FOUND);
  });
});
