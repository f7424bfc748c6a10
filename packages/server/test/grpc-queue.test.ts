import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { dateToTimestamp, fromStruct, grpcClient, timestampToDate, toStruct, type GrpcTestClient } from '../../../test-support/grpc.js';

let server: TestServer;
let client: GrpcTestClient;
before(async () => {
  server = await startTestServer('grpcqueue', { grpcPort: 0 });
  client = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
});
after(async () => {
  client.close();
  await server.close();
});

const enqueue = (request: Record<string, unknown>) => client.call('queue', 'Enqueue', request);
const dequeue = (request: Record<string, unknown>) => client.call('queue', 'Dequeue', request);
const getJob = async (jobId: string) => (await client.call('queue', 'GetJob', { jobId })).job;

/** Asserts the call fails with `code` and details matching `details`. */
async function rejects(promise: Promise<unknown>, code: status, details: RegExp): Promise<void> {
  await assert.rejects(promise, (err: { code: number; details: string }) => {
    assert.equal(err.code, code, `status ${status[err.code]} (${err.details}), expected ${status[code]}`);
    assert.match(err.details, details);
    return true;
  });
}

let queueCounter = 0;
const freshQueue = () => `gq-${++queueCounter}-${randomUUID().slice(0, 8)}`;

describe('QueueService.Enqueue and GetJob', () => {
  it('creates a pending job whose Struct payload, fields and timestamps round-trip', async () => {
    const payload = { to: 'a@example.com', n: 1.5, ok: true, none: null, list: [1, 'two', { three: 3 }], Nested: { keepCase: 1 } };
    const created = await enqueue({ queueName: 'emails', payload: toStruct(payload), priority: 7, tags: { team: 'core' } });
    assert.equal(created.created, true);
    const job = await getJob(created.jobId);
    assert.equal(job.id, created.jobId);
    assert.equal(job.organizationId, server.organizationId);
    assert.equal(job.queueName, 'emails');
    assert.equal(job.status, 'JOB_STATUS_PENDING');
    assert.deepEqual(fromStruct(job.payload), payload);
    assert.equal(job.result, null);
    assert.equal(job.priority, 7);
    assert.equal(job.maxRetries, 3, '0 means the server default');
    assert.equal(job.timeoutSeconds, 300, '0 means the server default');
    assert.equal(job.retryCount, 0);
    assert.equal(typeof job.createdAt.seconds, 'string', 'int64 reaches SDK clients as a string');
    assert.ok(Math.abs(timestampToDate(job.createdAt)!.getTime() - Date.now()) < 60_000);
    assert.equal(job.startedAt, null);
    assert.equal(job.leaseId, '');
    const rest = await server.request('GET', `/api/v1/jobs/${created.jobId}`);
    assert.deepEqual(rest.body.payload, payload, 'REST sees the same JSON');
    assert.deepEqual(rest.body.tags, { team: 'core' });
  });

  it('answers an idempotent repeat with the original id and created:false', async () => {
    const first = await enqueue({ queueName: 'q', payload: toStruct({ a: 1 }), idempotencyKey: 'grpc-k1' });
    const second = await enqueue({ queueName: 'q', payload: toStruct({ a: 2 }), idempotencyKey: 'grpc-k1' });
    assert.deepEqual(second, { jobId: first.jobId, created: false });
    const unkeyed = await enqueue({ queueName: 'q', payload: toStruct({}), idempotencyKey: '' });
    assert.notEqual(unkeyed.jobId, first.jobId, 'an empty key is no key');
  });

  it('makes a job with a future scheduled_at SCHEDULED and honours explicit settings', async () => {
    const when = new Date(Date.now() + 3_600_000);
    const created = await enqueue({ queueName: 'later', payload: toStruct({}), scheduledAt: dateToTimestamp(when), maxRetries: 7, timeoutSeconds: 60, priority: -5 });
    const job = await getJob(created.jobId);
    assert.equal(job.status, 'JOB_STATUS_SCHEDULED');
    assert.equal(timestampToDate(job.scheduledAt)!.getTime(), when.getTime());
    assert.equal(job.maxRetries, 7);
    assert.equal(job.timeoutSeconds, 60);
    assert.equal(job.priority, -5);
  });

  it('stores an absent payload as an empty object', async () => {
    const created = await enqueue({ queueName: 'q' });
    assert.deepEqual(fromStruct((await getJob(created.jobId)).payload), {});
  });

  it('refuses bad arguments with INVALID_ARGUMENT and the contract details', async () => {
    await rejects(enqueue({ queueName: '', payload: toStruct({}) }), status.INVALID_ARGUMENT, /Queue name/);
    await rejects(enqueue({ queueName: 'x'.repeat(101), payload: toStruct({}) }), status.INVALID_ARGUMENT, /Queue name/);
    await rejects(enqueue({ queueName: 'bad name!', payload: toStruct({}) }), status.INVALID_ARGUMENT, /alphanumeric/);
    await rejects(enqueue({ queueName: '.hidden', payload: toStruct({}) }), status.INVALID_ARGUMENT, /alphanumeric/);
    await rejects(enqueue({ queueName: 'q', priority: 500 }), status.INVALID_ARGUMENT, /priority/);
    await rejects(enqueue({ queueName: 'q', maxRetries: -1 }), status.INVALID_ARGUMENT, /max_retries/);
    await rejects(enqueue({ queueName: 'q', timeoutSeconds: 90_000 }), status.INVALID_ARGUMENT, /timeout_seconds/);
    await rejects(enqueue({ queueName: 'q', idempotencyKey: 'k'.repeat(256) }), status.INVALID_ARGUMENT, /idempotency_key/);
    await rejects(enqueue({ queueName: 'q', payload: toStruct({ big: 'x'.repeat(1024 * 1024) }) }), status.INVALID_ARGUMENT, /payload/);
    await rejects(enqueue({ queueName: 'q', payload: toStruct({ nul: 'a\u0000b' }) }), status.INVALID_ARGUMENT, /invalid/);
    await rejects(enqueue({ queueName: 'q', idempotencyKey: 'k\u0000' }), status.INVALID_ARGUMENT, /invalid/);
  });

  it('accepts a 100 KB payload', async () => {
    const created = await enqueue({ queueName: 'big', payload: toStruct({ blob: 'y'.repeat(100_000) }) });
    assert.equal((fromStruct((await getJob(created.jobId)).payload) as { blob: string }).blob.length, 100_000);
  });

  it('wraps a REST payload that is not a JSON object as {"value": …}', async () => {
    for (const payload of [42, 'text', [1, { a: true }]]) {
      const created = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'rest', payload } });
      assert.deepEqual(fromStruct((await getJob(created.body.id)).payload), { value: payload });
    }
  });

  it('answers GetJob for any unknown id string with an unset job', async () => {
    for (const jobId of ['', 'nope', randomUUID(), "'; DROP TABLE spool.jobs; --", 'ü'.repeat(300)]) {
      assert.equal(await getJob(jobId), null, jobId);
    }
  });
});

describe('QueueService.Enqueue with a job_key (spool-job-key metadata)', () => {
  /** Enqueue with `spool-job-key` metadata; resolves the answer and the response's spool-key-outcome. */
  const keyed = (request: Record<string, unknown>, jobKey: string) => new Promise<{ jobId: string; created: boolean; outcome: string | null }>((resolve, reject) => {
    const md = client.metadata();
    md.set('spool-job-key', jobKey);
    let outcome: string | null = null;
    const call = client.queue.Enqueue(request, md, { deadline: Date.now() + 30_000 }, (err: Error | null, response: { jobId: string; created: boolean }) => (err ? reject(err) : resolve({ ...response, outcome })));
    call.on('metadata', (answer: { get(key: string): unknown[] }) => {
      const value = answer.get('spool-key-outcome')[0];
      if (value !== undefined) outcome = String(value);
    });
  });

  it('dedupes, debounces and throttles as REST does, and says what happened', async () => {
    const queue = freshQueue();
    const first = await keyed({ queueName: queue, payload: toStruct({ n: 1 }) }, JSON.stringify({ key: 'user-42', mode: 'dedupe' }));
    assert.deepEqual([first.created, first.outcome], [true, 'created']);
    const again = await keyed({ queueName: queue, payload: toStruct({ n: 2 }) }, JSON.stringify({ key: 'user-42', mode: 'dedupe' }));
    assert.deepEqual([again.jobId, again.created, again.outcome], [first.jobId, false, 'deduplicated']);
    const rest = await server.request('GET', `/api/v1/jobs/${first.jobId}`);
    assert.deepEqual([rest.body.job_key, rest.body.job_key_mode, rest.body.payload], ['user-42', 'dedupe', { n: 1 }]);

    const debounced = await keyed({ queueName: queue, payload: toStruct({ v: 1 }) }, JSON.stringify({ key: 'sync', mode: 'debounce', window_secs: 60 }));
    const moved = await keyed({ queueName: queue, payload: toStruct({ v: 2 }) }, JSON.stringify({ key: 'sync', mode: 'debounce', window_secs: 60 }));
    assert.deepEqual([moved.jobId, moved.created, moved.outcome], [debounced.jobId, false, 'debounced']);
    assert.deepEqual((await server.request('GET', `/api/v1/jobs/${debounced.jobId}`)).body.payload, { v: 2 }, 'the waiting job took the latest payload');

    await keyed({ queueName: queue, payload: toStruct({}) }, JSON.stringify({ key: 'mail', mode: 'throttle', window_secs: 3600 }));
    const throttled = await keyed({ queueName: queue, payload: toStruct({}) }, JSON.stringify({ key: 'mail', mode: 'throttle', window_secs: 3600 }));
    assert.deepEqual([throttled.created, throttled.outcome], [false, 'throttled']);

    const plain = await enqueue({ queueName: queue, payload: toStruct({ n: 3 }) });
    assert.equal(plain.created, true, 'without the metadata, no key policy');
    assert.notEqual(plain.jobId, first.jobId);
  });

  it('refuses a bad job_key with INVALID_ARGUMENT naming the field, and creates nothing', async () => {
    const queue = freshQueue();
    await rejects(keyed({ queueName: queue, payload: toStruct({}) }, 'user-42'), status.INVALID_ARGUMENT, /^spool-job-key metadata must be a JSON object/);
    await rejects(keyed({ queueName: queue, payload: toStruct({}) }, JSON.stringify({ key: 'k', mode: 'debounce' })), status.INVALID_ARGUMENT, /^job_key\.window_secs is required with mode debounce/);
    await rejects(keyed({ queueName: queue, payload: toStruct({}) }, JSON.stringify({ key: 'k', mode: 'sometimes' })), status.INVALID_ARGUMENT, /^job_key\.mode must be one of dedupe, debounce, throttle, replace/);
    await rejects(keyed({ queueName: queue, payload: toStruct({}) }, JSON.stringify({ key: '', mode: 'dedupe' })), status.INVALID_ARGUMENT, /^job_key\.key must NOT have fewer than 1 characters/);
    await rejects(keyed({ queueName: queue, payload: toStruct({}) }, JSON.stringify({ key: 'k', mode: 'dedupe', windowSecs: 5 })), status.INVALID_ARGUMENT, /^job_key\.windowSecs is not allowed here/);
    await rejects(keyed({ queueName: queue, payload: toStruct({}) }, '["user-42"]'), status.INVALID_ARGUMENT, /^job_key must be object/);
    await rejects(keyed({ queueName: queue, payload: toStruct({}) }, JSON.stringify({ mode: 'dedupe' })), status.INVALID_ARGUMENT, /^job_key\.key is required/);
    const listed = await server.request('GET', `/api/v1/jobs?queue_name=${queue}`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.length, 0, 'no job was created');
  });
});

describe('QueueService.Dequeue', () => {
  it('leases a batch in priority order with fencing tokens', async () => {
    const queueName = freshQueue();
    const low = await enqueue({ queueName, payload: toStruct({ p: 'low' }), priority: 1 });
    const high = await enqueue({ queueName, payload: toStruct({ p: 'high' }), priority: 9 });
    const mid = await enqueue({ queueName, payload: toStruct({ p: 'mid' }), priority: 5 });
    const { jobs } = await dequeue({ queueName, workerId: 'w1', leaseDurationSecs: 60, batchSize: 2 });
    assert.deepEqual(jobs.map((j: { id: string }) => j.id), [high.jobId, mid.jobId]);
    for (const job of jobs) {
      assert.equal(job.status, 'JOB_STATUS_PROCESSING');
      assert.equal(job.assignedWorkerId, 'w1');
      assert.match(job.leaseId, /^[0-9a-f-]{36}$/);
      const leaseMs = timestampToDate(job.leaseExpiresAt)!.getTime() - Date.now();
      assert.ok(leaseMs > 30_000 && leaseMs <= 61_000, `lease of ${leaseMs} ms`);
    }
    const rest = await dequeue({ queueName, workerId: 'w1' });
    assert.deepEqual(rest.jobs.map((j: { id: string }) => j.id), [low.jobId], 'batch_size 0 means 1');
    const leaseMs = timestampToDate(rest.jobs[0].leaseExpiresAt)!.getTime() - Date.now();
    assert.ok(leaseMs > 250_000 && leaseMs <= 301_000, 'lease_duration_secs 0 means the 300 s default');
    assert.deepEqual(await dequeue({ queueName, workerId: 'w1', batchSize: 500 }), { jobs: [] }, 'nothing due is an empty list');
  });

  it('requires a worker id and a valid queue name', async () => {
    await rejects(dequeue({ queueName: 'q', workerId: '' }), status.INVALID_ARGUMENT, /Worker ID is required/);
    await rejects(dequeue({ queueName: '', workerId: 'w' }), status.INVALID_ARGUMENT, /Queue name/);
    await rejects(dequeue({ queueName: 'no way', workerId: 'w' }), status.INVALID_ARGUMENT, /alphanumeric/);
  });
});

async function leasedJob(payload: Record<string, unknown> = {}, options: Record<string, unknown> = {}) {
  const queueName = freshQueue();
  const { jobId } = await enqueue({ queueName, payload: toStruct(payload), ...options });
  const { jobs } = await dequeue({ queueName, workerId: 'worker-a', leaseDurationSecs: 30 });
  assert.equal(jobs[0].id, jobId);
  return { jobId, leaseId: jobs[0].leaseId as string, queueName };
}

describe('QueueService.Complete', () => {
  it('completes a held job and stores the result', async () => {
    const { jobId, leaseId } = await leasedJob();
    assert.deepEqual(await client.call('queue', 'Complete', { jobId, workerId: 'worker-a', leaseId, result: toStruct({ sent: true, id: 'm-1' }) }), { success: true });
    const job = await getJob(jobId);
    assert.equal(job.status, 'JOB_STATUS_COMPLETED');
    assert.deepEqual(fromStruct(job.result), { sent: true, id: 'm-1' });
    assert.ok(job.completedAt);
  });

  it('completes without a lease id (worker fencing) and without a result', async () => {
    const { jobId } = await leasedJob();
    assert.equal((await client.call('queue', 'Complete', { jobId, workerId: 'worker-a' })).success, true);
    assert.equal((await getJob(jobId)).result, null);
  });

  it('answers NOT_FOUND for unknown ids, finished jobs and other workers', async () => {
    for (const jobId of ['', 'nope', randomUUID()]) {
      await rejects(client.call('queue', 'Complete', { jobId, workerId: 'worker-a' }), status.NOT_FOUND, /not found/);
    }
    const { jobId } = await leasedJob();
    await rejects(client.call('queue', 'Complete', { jobId, workerId: 'worker-b' }), status.NOT_FOUND, /not found/);
    await client.call('queue', 'Complete', { jobId, workerId: 'worker-a' });
    await rejects(client.call('queue', 'Complete', { jobId, workerId: 'worker-a' }), status.NOT_FOUND, /not found/);
  });

  it('answers FAILED_PRECONDITION for a stale lease id', async () => {
    const { jobId } = await leasedJob();
    await rejects(client.call('queue', 'Complete', { jobId, workerId: 'worker-a', leaseId: randomUUID() }), status.FAILED_PRECONDITION, /[Ll]ease/);
    assert.equal((await getJob(jobId)).status, 'JOB_STATUS_PROCESSING', 'nothing changed');
  });

  it('requires a worker id, and refuses one PostgreSQL cannot store as INVALID_ARGUMENT, not INTERNAL', async () => {
    await rejects(client.call('queue', 'Complete', { jobId: randomUUID(), workerId: '' }), status.INVALID_ARGUMENT, /Worker ID is required/);
    await rejects(client.call('queue', 'Complete', { jobId: randomUUID(), workerId: 'w\u0000' }), status.INVALID_ARGUMENT, /invalid/);
    await rejects(dequeue({ queueName: 'q', workerId: 'w\u0000' }), status.INVALID_ARGUMENT, /invalid/);
  });
});

describe('QueueService.Fail', () => {
  it('schedules a retry with the engine backoff and reports the delay it scheduled', async () => {
    const { jobId, leaseId } = await leasedJob({}, { maxRetries: 2 });
    const before = Date.now();
    const response = await client.call('queue', 'Fail', { jobId, workerId: 'worker-a', leaseId, error: 'boom', retry: true });
    assert.equal(response.success, true);
    assert.equal(response.willRetry, true);
    const job = await getJob(jobId);
    assert.equal(job.status, 'JOB_STATUS_PENDING');
    assert.equal(job.retryCount, 1);
    assert.equal(job.lastError, 'boom');
    const scheduledIn = (timestampToDate(job.scheduledAt)!.getTime() - before) / 1000;
    assert.ok(response.nextRetryDelaySecs >= 1, `delay ${response.nextRetryDelaySecs}`);
    assert.ok(Math.abs(response.nextRetryDelaySecs - scheduledIn) <= 1.5, `reported ${response.nextRetryDelaySecs}s, scheduled in ${scheduledIn}s`);
  });

  it('dead-letters when retry is false or retries are exhausted', async () => {
    const first = await leasedJob({}, { maxRetries: 5 });
    const noRetry = await client.call('queue', 'Fail', { jobId: first.jobId, workerId: 'worker-a', error: 'fatal', retry: false });
    assert.deepEqual(noRetry, { success: true, willRetry: false, nextRetryDelaySecs: 0 });
    assert.equal((await getJob(first.jobId)).status, 'JOB_STATUS_DEADLETTER');

    const queueName = freshQueue();
    const { jobId } = await enqueue({ queueName, maxRetries: 1 });
    await server.database.pool.query('UPDATE spool.jobs SET retry_count = 1 WHERE id = $1', [jobId]);
    await dequeue({ queueName, workerId: 'worker-a' });
    const exhausted = await client.call('queue', 'Fail', { jobId, workerId: 'worker-a', error: 'again', retry: true });
    assert.equal(exhausted.willRetry, false);
    assert.equal((await getJob(jobId)).status, 'JOB_STATUS_DEADLETTER');
  });

  it('accepts a 5,000-character error and keeps 4,096', async () => {
    const { jobId } = await leasedJob();
    assert.equal((await client.call('queue', 'Fail', { jobId, workerId: 'worker-a', error: 'e'.repeat(5000), retry: false })).success, true);
    assert.equal((await getJob(jobId)).lastError.length, 4096);
  });

  it('keeps an error text that carries NUL characters', async () => {
    const { jobId } = await leasedJob();
    assert.equal((await client.call('queue', 'Fail', { jobId, workerId: 'worker-a', error: 'bad\u0000byte', retry: false })).success, true);
    assert.equal((await getJob(jobId)).lastError, 'bad\uFFFDbyte');
  });

  it('answers NOT_FOUND when the worker does not hold the job', async () => {
    await rejects(client.call('queue', 'Fail', { jobId: 'x', workerId: 'worker-a', error: 'e' }), status.NOT_FOUND, /not found/);
    const { jobId } = await leasedJob();
    await rejects(client.call('queue', 'Fail', { jobId, workerId: 'intruder', error: 'e' }), status.NOT_FOUND, /not found/);
  });
});

describe('QueueService.RenewLease', () => {
  it('extends the holder\'s lease', async () => {
    const { jobId, leaseId } = await leasedJob();
    const response = await client.call('queue', 'RenewLease', { jobId, workerId: 'worker-a', leaseId, extensionSecs: 600 });
    assert.equal(response.success, true);
    const ms = timestampToDate(response.newExpiresAt)!.getTime() - Date.now();
    assert.ok(ms > 500_000 && ms <= 601_000, `extended by ${ms} ms`);
    assert.equal(timestampToDate((await getJob(jobId)).leaseExpiresAt)!.getTime(), timestampToDate(response.newExpiresAt)!.getTime());
  });

  it('answers OK with success:false for another worker, a stale lease and unknown ids', async () => {
    const { jobId } = await leasedJob();
    assert.deepEqual(await client.call('queue', 'RenewLease', { jobId, workerId: 'worker-b', extensionSecs: 30 }), { success: false, newExpiresAt: null });
    assert.equal((await client.call('queue', 'RenewLease', { jobId, workerId: 'worker-a', leaseId: randomUUID(), extensionSecs: 30 })).success, false);
    for (const id of ['', 'nope', randomUUID()]) {
      assert.equal((await client.call('queue', 'RenewLease', { jobId: id, workerId: 'worker-a', extensionSecs: 30 })).success, false);
    }
  });
});

describe('QueueService.GetQueueStats', () => {
  it('counts a queue by status, int64 values as strings', async () => {
    const queueName = freshQueue();
    for (let i = 0; i < 3; i++) await enqueue({ queueName });
    await enqueue({ queueName, scheduledAt: dateToTimestamp(new Date(Date.now() + 3_600_000)) });
    const { jobs } = await dequeue({ queueName, workerId: 'w', batchSize: 2 });
    await client.call('queue', 'Complete', { jobId: jobs[0].id, workerId: 'w' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const stats = await client.call('queue', 'GetQueueStats', { queueName });
    assert.deepEqual({ ...stats, maxAgeMs: undefined }, {
      queueName, pending: '1', scheduled: '1', processing: '1', completed: '1', failed: '0', deadletter: '0', total: '4', maxAgeMs: undefined,
    });
    assert.ok(Number(stats.maxAgeMs) > 0, `max_age_ms ${stats.maxAgeMs}`);
  });

  it('answers zeros for an unknown queue and validates the name', async () => {
    const stats = await client.call('queue', 'GetQueueStats', { queueName: 'never-used' });
    assert.deepEqual(stats, { queueName: 'never-used', pending: '0', scheduled: '0', processing: '0', completed: '0', failed: '0', deadletter: '0', total: '0', maxAgeMs: '0' });
    await rejects(client.call('queue', 'GetQueueStats', { queueName: '' }), status.INVALID_ARGUMENT, /Queue name/);
  });
});
