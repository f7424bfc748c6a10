import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { jobClaim, jobClaimOutcome, jobInsertMany, queueConfigUpsert, queuePause, type JobRow } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimDryConcurrently } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('queue-rate-limit');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const enqueue = (queue: string, count: number) =>
  jobInsertMany(t.pool, Array.from({ length: count }, (_, i) => ({ organizationId: org, queueName: queue, payload: { i } })));

const claimOf = (db: pg.Pool, queue: string, limit: number, workerId = 'w') =>
  jobClaimOutcome(db, { organizationId: org, queueName: queue, workerId, limit, leaseSeconds: 60 });

describe('queue rate_limit', () => {
  it('starts no more jobs than the token bucket holds, over every window, while four claimers claim as fast as they can', async () => {
    const queue = 'rated';
    const rate = 40;
    const burst = 6;
    await enqueue(queue, 400);
    await queueConfigUpsert(t.pool, org, queue, { rateLimit: rate, rateLimitBurst: burst });
    const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: t.url, max: 1 }));
    const started: number[] = [];
    const runForMs = 2500;
    let begin = 0;
    try {
      // Each connection's first capped claim parses its statement while it
      // holds the queue's lock, which stretches the others' waits past the
      // allowance below: a claim of an empty capped queue parses it first.
      await queueConfigUpsert(t.pool, org, `${queue}-warm`, { rateLimit: rate });
      await Promise.all(pools.map(async (pool) => assert.deepEqual(await claimOf(pool, `${queue}-warm`, 1), { jobs: [], retryAfterMs: null })));
      begin = Date.now();
      await Promise.all(pools.map(async (pool, w) => {
        while (Date.now() - begin < runForMs) {
          const { jobs } = await claimOf(pool, queue, 10, `w${w}`);
          for (const job of jobs) started.push(job.started_at!.getTime());
        }
      }));
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
    const elapsedS = (Date.now() - begin) / 1000;
    // The whole run: the burst, then the rate.
    assert.ok(started.length <= burst + rate * elapsedS + 1, `${started.length} jobs started in ${elapsedS.toFixed(2)} s at ${rate}/s with a burst of ${burst}`);
    // The bucket was refilled and spent more than once (not a claim that gives nothing).
    assert.ok(started.length > burst + rate * 0.25, `only ${started.length} jobs started in ${elapsedS.toFixed(2)} s`);
    // Every window of start times. started_at is the claim transaction's
    // start, which comes before its wait for the config row's lock, so a
    // window may look up to one lock wait shorter than it was: allowed 0.25 s.
    started.sort((a, b) => a - b);
    for (let i = 0; i < started.length; i++) {
      for (let j = i; j < started.length; j++) {
        const windowS = (started[j]! - started[i]!) / 1000;
        const allowed = burst + rate * (windowS + 0.25);
        assert.ok(j - i + 1 <= allowed, `${j - i + 1} jobs started within ${windowS.toFixed(3)} s (at most ${allowed.toFixed(1)} allowed)`);
      }
    }
    const bucket = await t.pool.query<{ rate_tokens: number }>('SELECT rate_tokens FROM spool.queue_config WHERE organization_id = $1 AND queue_name = $2', [org, queue]);
    assert.ok(bucket.rows[0]!.rate_tokens >= 0 && bucket.rows[0]!.rate_tokens <= burst, `tokens ${bucket.rows[0]!.rate_tokens}`);
  });

  it('says when the next batch of tokens comes, and gives back tokens a claim did not use', async () => {
    const queue = 'rated-retry';
    await queueConfigUpsert(t.pool, org, queue, { rateLimit: 2, rateLimitBurst: 3 });
    // An empty queue takes no tokens: each claim gives back what it took.
    for (let i = 0; i < 5; i++) assert.deepEqual(await claimOf(t.pool, queue, 5), { jobs: [], retryAfterMs: null });
    await enqueue(queue, 10);
    const first = await claimOf(t.pool, queue, 5);
    assert.equal(first.jobs.length, 3, 'a full bucket: the burst');
    // Three tokens spent of a burst of three at 2/s: three more come in about 1.5 s.
    assert.ok(first.retryAfterMs !== null && first.retryAfterMs > 1000 && first.retryAfterMs <= 1500, `retryAfterMs ${first.retryAfterMs}`);
    const second = await claimOf(t.pool, queue, 5);
    assert.equal(second.jobs.length, 0);
    assert.ok(second.retryAfterMs !== null && second.retryAfterMs <= 1500, `retryAfterMs ${second.retryAfterMs}`);
  });

  it('applies with a concurrency_limit, stops with the queue paused, and stops applying when removed', async () => {
    const queue = 'rated-capped';
    await enqueue(queue, 30);
    await queueConfigUpsert(t.pool, org, queue, { rateLimit: 1, rateLimitBurst: 4, concurrencyLimit: 2 });
    const claimed: JobRow[] = (await claimOf(t.pool, queue, 10)).jobs;
    assert.equal(claimed.length, 2, 'the concurrency limit binds first; the two unused tokens go back');
    const tokens = await t.pool.query<{ rate_tokens: number }>('SELECT rate_tokens FROM spool.queue_config WHERE organization_id = $1 AND queue_name = $2', [org, queue]);
    assert.ok(tokens.rows[0]!.rate_tokens >= 2 && tokens.rows[0]!.rate_tokens < 2.5, `tokens ${tokens.rows[0]!.rate_tokens}`);
    await queuePause(t.pool, org, queue, null);
    assert.deepEqual(await claimOf(t.pool, queue, 10), { jobs: [], retryAfterMs: null }, 'paused: nothing, and no retry time');
    await queueConfigUpsert(t.pool, org, queue, { concurrencyLimit: null, enabled: true });
    const row = await queueConfigUpsert(t.pool, org, queue, { rateLimit: null });
    assert.equal(row.rate_limit, null);
    assert.equal(row.rate_limit_burst, 4, 'the burst is kept for when a limit comes back');
    const uncapped = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 20, leaseSeconds: 60 });
    assert.equal(uncapped.length, 20, 'no rate limit any more: a full batch at once');
  });

  it('never hands a job to two claimers of a rate-limited queue', async () => {
    const queue = 'rated-exclusive';
    await enqueue(queue, 300);
    await queueConfigUpsert(t.pool, org, queue, { rateLimit: 100_000 });
    const { claimed, duplicates } = await claimDryConcurrently(t.url, 8, async (pool, w) => (await claimOf(pool, queue, 7, `w${w}`)).jobs);
    assert.equal(duplicates, 0);
    assert.equal(claimed, 300);
  });
});
