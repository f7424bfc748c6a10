import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  jobClaim, jobClaimQueuesOutcome, jobCompleteMany, jobInsertMany, queueConfigUpsert, queuePause, type JobRow, type NewJob,
} from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimDryConcurrently } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('claim-queues');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

/** One statement per call: jobs of a later call are younger (claim order is priority, created_at, id). */
const enqueue = (queue: string, count: number, extra: Partial<NewJob> = {}) =>
  jobInsertMany(t.pool, Array.from({ length: count }, (_, i) => ({ organizationId: org, queueName: queue, payload: { i }, ...extra })));

const claimQueues = async (db: pg.Pool, queues: string[], limit: number, workerId = 'w') =>
  (await jobClaimQueuesOutcome(db, { organizationId: org, queueNames: queues, workerId, limit, leaseSeconds: 60 })).jobs;

const processing = async (queue: string) =>
  (await t.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 AND status = 'processing'`, [org, queue])).rows[0]!.n;

const complete = (jobs: JobRow[]) => jobCompleteMany(t.pool, org, jobs.map((job) => ({ id: job.id, workerId: job.assigned_worker_id!, leaseId: job.lease_id! })));

describe('jobClaimQueuesOutcome (one claim across several queues)', () => {
  it('takes the best jobs of all the queues: higher priority first across them, then older', async () => {
    const inserted: { id: string; queue: string; priority: number; n: number }[] = [];
    // Interleaved enqueues, so age alternates between the queues.
    const plan: [string, number][] = [['order-a', 0], ['order-b', 5], ['order-c', 0], ['order-a', 5], ['order-b', 0], ['order-c', -3], ['order-a', 0], ['order-b', 100], ['order-c', 5], ['order-a', -3]];
    for (const [n, [queue, priority]] of plan.entries()) {
      const [job] = await enqueue(queue, 1, { priority });
      inserted.push({ id: job!.id, queue, priority, n });
    }
    const expected = [...inserted].sort((a, b) => b.priority - a.priority || a.n - b.n);
    const first = await claimQueues(t.pool, ['order-a', 'order-b', 'order-c'], 4);
    assert.deepEqual(first.map((job) => job.id), expected.slice(0, 4).map((j) => j.id), 'the four best of the three queues, in claim order');
    const rest = await claimQueues(t.pool, ['order-c', 'order-b', 'order-a'], 100);
    assert.deepEqual(rest.map((job) => job.id), expected.slice(4).map((j) => j.id), 'the rest, whatever order the names come in');
    assert.ok(rest.every((job) => job.status === 'processing' && job.lease_id && job.assigned_worker_id === 'w'));
    const history = await t.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM spool.job_events WHERE organization_id = $1 AND event = 'claim' AND queue_name LIKE 'order-%'`, [org]);
    assert.equal(history.rows[0]!.n, 10, 'every claim is in the history');
  });

  it('reads a queue again up to the cut when its even part is not enough', async () => {
    // Claim order a1 b1 a2 a3 b2 b3 a4: a claim of 4 reads 3 of each queue
    // first (a1 a2 a3 b1 b2 b3); a's three all make the first four, the
    // last of them is the cut, and a is read again up to it.
    const ids: string[] = [];
    for (const queue of ['cut-a', 'cut-b', 'cut-a', 'cut-a', 'cut-b', 'cut-b', 'cut-a']) ids.push((await enqueue(queue, 1))[0]!.id);
    const claimed = await claimQueues(t.pool, ['cut-a', 'cut-b'], 4);
    assert.deepEqual(claimed.map((job) => job.id), [ids[0], ids[1], ids[2], ids[3]]);
  });

  it('takes exactly the first n in claim order across the queues, whatever their sizes and priorities (random cases)', async () => {
    // A seeded generator: a failure names its case and replays.
    let seed = 7;
    const random = (below: number) => {
      // mulberry32
      seed = (seed + 0x6d2b79f5) | 0;
      let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
      return ((x ^ (x >>> 14)) >>> 0) % below;
    };
    for (let round = 0; round < 100; round++) {
      const queues = Array.from({ length: 2 + random(6) }, (_, q) => `rand-${round}-${q}`);
      // Statements in a random order of the queues: ages interleave.
      for (let batch = 0; batch < 12; batch++) {
        const queue = queues[random(queues.length)]!;
        const count = random(4) === 0 ? 0 : 1 + random(random(2) === 0 ? 12 : 3);
        const jobs = Array.from({ length: count }, (): NewJob => ({ organizationId: org, queueName: queue, payload: {}, priority: [0, 0, 0, 5, -5][random(5)] }));
        if (jobs.length > 0) await jobInsertMany(t.pool, jobs);
      }
      const limit = 1 + random(random(4) === 0 ? 60 : 12);
      const expected = await t.pool.query<{ id: string }>(
        'SELECT id FROM spool.claimable_jobs WHERE organization_id = $1 AND queue_name = ANY ($2) ORDER BY priority DESC, created_at, id LIMIT $3', [org, queues, limit]);
      const claimed = await claimQueues(t.pool, queues, limit);
      assert.deepEqual(claimed.map((job) => job.id), expected.rows.map((r) => r.id), `round ${round}: ${queues.length} queues, limit ${limit}`);
    }
  });

  it('leaves a paused queue alone and takes the others', async () => {
    await enqueue('paused-a', 5);
    await enqueue('paused-b', 5);
    await queuePause(t.pool, org, 'paused-a', 'test');
    const jobs = await claimQueues(t.pool, ['paused-a', 'paused-b'], 10);
    assert.deepEqual(jobs.map((job) => job.queue_name), Array(5).fill('paused-b'));
    assert.equal(await processing('paused-a'), 0);
  });

  it('hands each job of three queues to exactly one of 10 concurrent claimers, multi-queue and single-queue mixed', async () => {
    const queues = ['race-a', 'race-b', 'race-c'];
    for (const queue of queues) {
      await enqueue(queue, 300);
      await enqueue(queue, 100, { priority: 7 });
    }
    const result = await claimDryConcurrently(t.url, 10, (pool, w) =>
      w % 3 === 0 ? jobClaim(pool, { organizationId: org, queueName: queues[w % queues.length]!, workerId: `w${w}`, limit: 7, leaseSeconds: 60 }) : claimQueues(pool, queues, 9, `w${w}`));
    assert.equal(result.duplicates, 0);
    assert.equal(result.claimed, 1200);
    for (const queue of queues) assert.equal(await processing(queue), 400);
  });

  it('holds a capped queue to its concurrency_limit under 10 concurrent multi-queue and single-queue claimers', async () => {
    // The capped queue's jobs are the oldest: every merge offers them first.
    await enqueue('capped-a', 50);
    await enqueue('capped-b', 120);
    await queueConfigUpsert(t.pool, org, 'capped-a', { concurrencyLimit: 3 });
    const claimers = (pool: pg.Pool, w: number) => w % 2 === 0
      ? claimQueues(pool, ['capped-a', 'capped-b'], 5, `w${w}`)
      : jobClaim(pool, { organizationId: org, queueName: 'capped-a', workerId: `w${w}`, limit: 5, leaseSeconds: 60 });
    const first = await claimDryConcurrently(t.url, 10, claimers);
    assert.equal(first.duplicates, 0);
    assert.equal(await processing('capped-a'), 3, 'three places, however the claims came');
    assert.equal(await processing('capped-b'), 120, 'the capped queue being full does not stop the other');
    assert.equal(first.claimed, 123);
    const running = await t.pool.query<JobRow>(`SELECT * FROM spool.jobs WHERE organization_id = $1 AND queue_name = 'capped-a' AND status = 'processing'`, [org]);
    await complete(running.rows.slice(0, 2));
    const second = await claimDryConcurrently(t.url, 10, claimers);
    assert.equal(second.claimed, 2, 'two completions free two places');
    assert.equal(await processing('capped-a'), 3);
    // Rounds of ten claims sent at once on connections already open, the
    // running jobs completed between rounds: no round may start a fourth.
    const pools = Array.from({ length: 10 }, () => new pg.Pool({ connectionString: t.url, max: 1 }));
    try {
      await Promise.all(pools.map((pool) => pool.query('SELECT 1')));
      for (let round = 0; round < 12; round++) {
        const started = await t.pool.query<JobRow>(`SELECT * FROM spool.jobs WHERE organization_id = $1 AND queue_name = 'capped-a' AND status = 'processing'`, [org]);
        await complete(started.rows);
        const claimed = (await Promise.all(pools.map((pool, w) => claimers(pool, w)))).flat();
        assert.equal(claimed.length, 3, `round ${round}: ${claimed.length} claimed for three places`);
        assert.equal(await processing('capped-a'), 3);
      }
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('takes what a rate-limited queue has tokens for, and says when more come', async () => {
    await enqueue('rated-a', 10);
    await enqueue('rated-b', 3);
    await queueConfigUpsert(t.pool, org, 'rated-a', { rateLimit: 1, rateLimitBurst: 2 });
    const first = await jobClaimQueuesOutcome(t.pool, { organizationId: org, queueNames: ['rated-a', 'rated-b'], workerId: 'w', limit: 10, leaseSeconds: 60 });
    assert.deepEqual(first.jobs.map((job) => job.queue_name), ['rated-a', 'rated-a', 'rated-b', 'rated-b', 'rated-b'], 'the burst of the older queue, then the other');
    const second = await jobClaimQueuesOutcome(t.pool, { organizationId: org, queueNames: ['rated-a', 'rated-b'], workerId: 'w', limit: 10, leaseSeconds: 60 });
    assert.deepEqual(second.jobs, []);
    assert.ok(second.retryAfterMs !== null && second.retryAfterMs > 0 && second.retryAfterMs <= 2000, `retry after ${second.retryAfterMs} ms`);
  });

  it('offers the batch to the other queues when a capped queue cannot use its part (full keys)', async () => {
    await enqueue('keyed-a', 20, { concurrencyKey: 'k' });
    await enqueue('keyed-b', 8);
    await queueConfigUpsert(t.pool, org, 'keyed-a', { concurrencyKeyLimit: 1 });
    const first = await claimQueues(t.pool, ['keyed-a', 'keyed-b'], 5);
    assert.deepEqual(first.map((job) => job.queue_name), ['keyed-a', 'keyed-b', 'keyed-b', 'keyed-b', 'keyed-b'], 'one job of the key, the rest from the other queue');
    const second = await claimQueues(t.pool, ['keyed-a', 'keyed-b'], 5);
    assert.deepEqual(second.map((job) => job.queue_name), ['keyed-b', 'keyed-b', 'keyed-b', 'keyed-b'], 'the key is full: the other queue fills the batch');
    assert.equal(await processing('keyed-a'), 1);
  });

  it('serves a fair-share queue in turns through its own claim', async () => {
    for (const key of ['x', 'x', 'x', 'y', 'z']) await enqueue('fair-a', 1, { fairnessKey: key });
    await queueConfigUpsert(t.pool, org, 'fair-a', { fairness: 'round_robin' });
    const jobs = await claimQueues(t.pool, ['fair-a', 'fair-b'], 3);
    assert.deepEqual(jobs.map((job) => job.fairness_key).sort(), ['x', 'y', 'z']);
  });

  it('claims one named queue with the single-queue claim, and refuses no names or too many', async () => {
    await enqueue('one-a', 2);
    assert.equal((await claimQueues(t.pool, ['one-a', 'one-a'], 5)).length, 2);
    await assert.rejects(claimQueues(t.pool, [], 5), /queue_names/);
    await assert.rejects(claimQueues(t.pool, Array.from({ length: 33 }, (_, i) => `q${i}`), 5), /queue_names/);
  });
});
