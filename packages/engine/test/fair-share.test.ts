import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { jobClaim, jobInsertMany, queueConfigUpsert, type JobRow, type NewJob } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimDryConcurrently } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('fair-share');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

/** One statement per call, so each call's jobs are younger than the last call's (claim order is priority, created_at). */
async function enqueue(queue: string, count: number, job: Partial<NewJob> = {}): Promise<void> {
  for (let offset = 0; offset < count; offset += 1000) {
    await jobInsertMany(t.pool, Array.from({ length: Math.min(1000, count - offset) }, (_, i) => ({ organizationId: org, queueName: queue, payload: { i: offset + i }, ...job })));
  }
}

const claim = (queue: string, limit: number, db: pg.Pool = t.pool): Promise<JobRow[]> =>
  jobClaim(db, { organizationId: org, queueName: queue, workerId: 'w', limit, leaseSeconds: 60 });

describe('fair share', () => {
  it('claims the 10 jobs of a key enqueued after 20,000 of another within the first 200 claimed', async () => {
    const queue = 'fair-starve';
    await enqueue(queue, 20_000, { fairnessKey: 'big' });
    await enqueue(queue, 10, { fairnessKey: 'small' });
    await queueConfigUpsert(t.pool, org, queue, { fairness: 'round_robin' });
    let claimed = 0;
    let small = 0;
    while (small < 10 && claimed < 20_010) {
      const jobs = await claim(queue, 10);
      assert.ok(jobs.length > 0, 'jobs are left');
      claimed += jobs.length;
      small += jobs.filter((job) => job.fairness_key === 'small').length;
    }
    assert.equal(small, 10);
    assert.ok(claimed <= 200, `the 10 "small" jobs were all claimed only after ${claimed} jobs`);
  });

  it('gives each key its weight per turn', async () => {
    const queue = 'fair-weights';
    await enqueue(queue, 100, { fairnessKey: 'heavy' });
    await enqueue(queue, 100, { fairnessKey: 'light' });
    await queueConfigUpsert(t.pool, org, queue, { fairness: 'round_robin', fairnessWeights: { heavy: 3 } });
    const jobs: JobRow[] = [];
    for (let i = 0; i < 4; i++) jobs.push(...(await claim(queue, 10)));
    assert.equal(jobs.length, 40);
    const heavy = jobs.filter((job) => job.fairness_key === 'heavy').length;
    assert.ok(heavy >= 28 && heavy <= 32, `${heavy} of 40 jobs of the key with weight 3 (about 30 expected)`);
  });

  it('puts priority first, and jobs without a key after the keyed jobs of their priority', async () => {
    const queue = 'fair-priority';
    await enqueue(queue, 5, { fairnessKey: 'a' });
    await enqueue(queue, 5, { fairnessKey: 'b' });
    await enqueue(queue, 2);
    await enqueue(queue, 1, { fairnessKey: 'b', priority: 5 });
    await enqueue(queue, 1, { priority: 9 });
    await queueConfigUpsert(t.pool, org, queue, { fairness: 'round_robin' });
    const [first] = await claim(queue, 1);
    assert.deepEqual([first!.priority, first!.fairness_key], [9, null], 'the unkeyed job of the highest priority');
    const [second] = await claim(queue, 1);
    assert.deepEqual([second!.priority, second!.fairness_key], [5, 'b'], 'then the keyed job of priority 5');
    const rest: JobRow[] = [];
    for (let i = 0; i < 20; i++) {
      rest.push(...(await claim(queue, 3)));
      const a = rest.filter((job) => job.fairness_key === 'a').length;
      const b = rest.filter((job) => job.fairness_key === 'b').length;
      if (a + b < 10) assert.ok(Math.abs(a - b) <= 1, `the keys take turns: ${a} of "a" and ${b} of "b" after ${rest.length} jobs`);
    }
    assert.equal(rest.length, 12);
    const keys = rest.map((job) => job.fairness_key);
    assert.deepEqual(keys.slice(10), [null, null], 'unkeyed jobs of priority 0 once the keyed ones are gone');
    assert.deepEqual(keys.slice(0, 10).sort(), ['a', 'a', 'a', 'a', 'a', 'b', 'b', 'b', 'b', 'b']);
  });

  it('hands each job to one of 8 concurrent claimers, also with a concurrency_key_limit', async () => {
    const queue = 'fair-race';
    const keys = ['k1', 'k2', 'k3', 'k4', 'k5'];
    for (const key of keys) await enqueue(queue, 60, { fairnessKey: key, concurrencyKey: key });
    await queueConfigUpsert(t.pool, org, queue, { fairness: 'round_robin', concurrencyKeyLimit: 1000 });
    const { claimed, duplicates } = await claimDryConcurrently(t.url, 8, (pool) => claim(queue, 7, pool));
    assert.equal(duplicates, 0);
    assert.equal(claimed, 300);
    // With one processing job per key at most, a claim takes one job of each key.
    const limited = 'fair-limited';
    for (const key of keys) await enqueue(limited, 3, { fairnessKey: key, concurrencyKey: key });
    await queueConfigUpsert(t.pool, org, limited, { fairness: 'round_robin', concurrencyKeyLimit: 1 });
    assert.deepEqual((await claim(limited, 10)).map((job) => job.fairness_key).sort(), keys);
    assert.deepEqual(await claim(limited, 10), []);
  });
});
