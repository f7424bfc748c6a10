import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { status, type ClientDuplexStream, type ClientReadableStream, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import { jobInsertMany } from '@spool/engine';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { fromStruct, grpcClient, processJobsSession, toStruct, type GrpcTestClient } from '../../../test-support/grpc.js';

let server: TestServer;
let client: GrpcTestClient;
before(async () => {
  server = await startTestServer('grpcstream', { grpcPort: 0 });
  client = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
});
after(async () => {
  client.close();
  await server.close();
});

const freshQueue = () => `gs-${randomUUID().slice(0, 8)}`;

/** Reads `count` messages from a stream. */
function take<T>(stream: NodeJS.EventEmitter, count: number): Promise<T[]> {
  const got: T[] = [];
  return new Promise((resolve, reject) => {
    const onData = (message: T) => {
      got.push(message);
      if (got.length === count) {
        stream.off('data', onData);
        resolve(got);
      }
    };
    stream.on('data', onData);
    stream.once('error', reject);
  });
}

/** The final status of a call (OK when the server ended it cleanly). */
function finalStatus(stream: NodeJS.EventEmitter): Promise<StatusObject> {
  return new Promise((resolve) => {
    stream.on('error', () => {});
    stream.once('status', resolve);
  });
}



describe('QueueService.StreamJobs', () => {
  it('streams due jobs, then wakes for jobs enqueued while it waits', async () => {
    const queueName = freshQueue();
    const first = await client.call('queue', 'Enqueue', { queueName, payload: toStruct({ n: 1 }) });
    const stream: ClientReadableStream<any> = client.queue.StreamJobs({ queueName, workerId: 'streamer', leaseDurationSecs: 60 }, client.metadata());
    const [job1] = await take<any>(stream, 1);
    assert.equal(job1.id, first.jobId);
    assert.equal(job1.status, 'JOB_STATUS_PROCESSING');
    assert.equal(job1.assignedWorkerId, 'streamer');
    assert.deepEqual(fromStruct(job1.payload), { n: 1 });
    const later = take<any>(stream, 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await client.call('queue', 'Enqueue', { queueName, payload: toStruct({ n: 2 }) });
    const third = await client.call('queue', 'Enqueue', { queueName, payload: toStruct({ n: 3 }) });
    assert.deepEqual((await later).map((j) => j.id), [second.jobId, third.jobId]);
    const ended = finalStatus(stream);
    stream.cancel();
    assert.equal((await ended).code, status.CANCELLED);
  });

  it('refuses a missing worker id with INVALID_ARGUMENT', async () => {
    const stream: ClientReadableStream<any> = client.queue.StreamJobs({ queueName: 'q', workerId: '' }, client.metadata());
    const err = await new Promise<ServiceError>((resolve) => stream.on('error', resolve));
    assert.equal(err.code, status.INVALID_ARGUMENT);
    assert.match(err.details, /Worker ID is required/);
  });

  it('lets a streaming worker process 10,000 jobs, each completed exactly once', { timeout: 300_000 }, async () => {
    const queueName = freshQueue();
    const total = 10_000;
    for (let i = 0; i < total; i += 1000) {
      await jobInsertMany(server.database.pool, Array.from({ length: 1000 }, (_, k) => ({ organizationId: server.organizationId, queueName, payload: { i: i + k } })));
    }
    const delivered = new Set<string>();
    let duplicates = 0;
    let completed = 0;
    const streams: ClientReadableStream<any>[] = [];
    await new Promise<void>((resolve, reject) => {
      for (const workerId of ['bulk-a', 'bulk-b']) {
        const stream: ClientReadableStream<any> = client.queue.StreamJobs({ queueName, workerId, leaseDurationSecs: 300 }, client.metadata());
        streams.push(stream);
        stream.on('error', (err: ServiceError) => {
          if (err.code !== status.CANCELLED) reject(err);
        });
        let inFlight = 0;
        stream.on('data', (job: any) => {
          if (delivered.has(job.id)) duplicates += 1;
          delivered.add(job.id);
          // A bounded number of completions in flight per stream; past it the stream pauses (backpressure).
          if (++inFlight >= 16) stream.pause();
          client.call('queue', 'Complete', { jobId: job.id, workerId, leaseId: job.leaseId, result: toStruct({ ok: true }) }).then(() => {
            completed += 1;
            if (completed === total) resolve();
            if (--inFlight < 8 && stream.isPaused()) stream.resume();
          }, reject);
        });
      }
    });
    for (const stream of streams) stream.cancel();
    assert.equal(duplicates, 0, 'no job was delivered twice');
    assert.equal(delivered.size, total);
    const counts = await server.database.pool.query<{ jobs: number; completed: number }>(
      "SELECT count(*)::int AS jobs, count(*) FILTER (WHERE status = 'completed')::int AS completed FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2",
      [server.organizationId, queueName],
    );
    assert.deepEqual(counts.rows[0], { jobs: total, completed: total });
    const history = await server.database.pool.query<{ jobs: number; events: number; max_per_job: number }>(
      `SELECT count(*)::int AS jobs, sum(n)::int AS events, max(n)::int AS max_per_job
       FROM (SELECT job_id, count(*) AS n FROM spool.job_events
             WHERE organization_id = $1 AND queue_name = $2 AND event = 'complete' GROUP BY job_id) per_job`,
      [server.organizationId, queueName],
    );
    assert.deepEqual(history.rows[0], { jobs: total, events: total, max_per_job: 1 });
  });
});

describe('QueueService.ProcessJobs', () => {
  it('answers each request with exactly one response, in order', async () => {
    const queueName = freshQueue();
    const a = await client.call('queue', 'Enqueue', { queueName, payload: toStruct({ n: 'a' }), maxRetries: 3 });
    const b = await client.call('queue', 'Enqueue', { queueName, payload: toStruct({ n: 'b' }), maxRetries: 3 });
    const duplex: ClientDuplexStream<any, any> = client.queue.ProcessJobs(client.metadata());
    const send = processJobsSession(duplex);

    const got1 = await send({ dequeue: { queueName, workerId: 'pw', leaseDurationSecs: 30 } });
    assert.equal(got1.response, 'job');
    assert.equal(got1.job.id, a.jobId);
    const renewed = await send({ renewLease: { jobId: a.jobId, workerId: 'pw', leaseId: got1.job.leaseId, extensionSecs: 120 } });
    assert.equal(renewed.response, 'renewLease');
    assert.equal(renewed.renewLease.success, true);
    const done = await send({ complete: { jobId: a.jobId, workerId: 'pw', leaseId: got1.job.leaseId, result: toStruct({ fine: 1 }) } });
    assert.deepEqual(done.complete, { success: true });

    const got2 = await send({ dequeue: { queueName, workerId: 'pw' } });
    assert.equal(got2.job.id, b.jobId);
    const failed = await send({ fail: { jobId: b.jobId, workerId: 'pw', error: 'nope', retry: true } });
    assert.equal(failed.response, 'fail');
    assert.equal(failed.fail.success, true);
    assert.equal(failed.fail.willRetry, true);

    const none = await send({ dequeue: { queueName: freshQueue(), workerId: 'pw' } });
    assert.deepEqual(none.error, { code: 'NO_JOBS', message: 'No jobs available' });
    const unknown = await send({ complete: { jobId: 'no-such-job', workerId: 'pw' } });
    assert.equal(unknown.error.code, 'NOT_FOUND');
    const empty = await send({});
    assert.equal(empty.error.code, 'INVALID_REQUEST');
    const invalid = await send({ dequeue: { queueName: 'q', workerId: '' } });
    assert.equal(invalid.error.code, 'INVALID_ARGUMENT');
    assert.match(invalid.error.message, /Worker ID is required/);
    const notHeld = await send({ renewLease: { jobId: b.jobId, workerId: 'pw', extensionSecs: 30 } });
    assert.equal(notHeld.renewLease.success, false);

    const ended = finalStatus(duplex);
    duplex.end();
    assert.equal((await ended).code, status.OK, 'the server ends the call when the client half-closes');
    assert.equal((await client.call('queue', 'GetJob', { jobId: a.jobId })).job.status, 'JOB_STATUS_COMPLETED');
  });

  it('hands a waiting dequeue a job enqueued while it waits', async () => {
    const queueName = freshQueue();
    const duplex: ClientDuplexStream<any, any> = client.queue.ProcessJobs(client.metadata());
    const send = processJobsSession(duplex);
    const pending = send({ dequeue: { queueName, workerId: 'waiter' } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const { jobId } = await client.call('queue', 'Enqueue', { queueName });
    const response = await pending;
    assert.equal(response.job?.id, jobId, JSON.stringify(response.error));
    duplex.end();
  });

  it('processes pipelined requests in order', async () => {
    const queueName = freshQueue();
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push((await client.call('queue', 'Enqueue', { queueName, priority: 0 })).jobId);
    const duplex: ClientDuplexStream<any, any> = client.queue.ProcessJobs(client.metadata());
    const responses = take<any>(duplex, 50);
    for (let i = 0; i < 50; i++) duplex.write({ dequeue: { queueName, workerId: 'pipe' } });
    const jobs = (await responses).map((r) => r.job);
    assert.deepEqual(jobs.map((j) => j.id), ids);
    const completions = take<any>(duplex, 50);
    for (const job of jobs) duplex.write({ complete: { jobId: job.id, workerId: 'pipe', leaseId: job.leaseId } });
    assert.ok((await completions).every((r) => r.complete?.success === true));
    duplex.end();
  });
});

describe('gRPC shutdown', () => {
  it('ends open streams with an OK status when the server stops', async () => {
    const own = await startTestServer('grpcstop', { grpcPort: 0 });
    const ownClient = grpcClient(`127.0.0.1:${own.grpcPort}`, own.apiKey);
    try {
      const stream: ClientReadableStream<any> = ownClient.queue.StreamJobs({ queueName: 'idle', workerId: 'w' }, ownClient.metadata());
      const duplex: ClientDuplexStream<any, any> = ownClient.queue.ProcessJobs(ownClient.metadata());
      const send = processJobsSession(duplex);
      assert.equal((await send({ dequeue: { queueName: 'idle', workerId: 'w' } })).error.code, 'NO_JOBS', 'both calls are up');
      const streamStatus = finalStatus(stream);
      const duplexStatus = finalStatus(duplex);
      await own.spool.stop();
      assert.equal((await streamStatus).code, status.OK);
      assert.equal((await duplexStatus).code, status.OK);
    } finally {
      ownClient.close();
      await own.close();
    }
  });
});
