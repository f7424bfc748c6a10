import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { jobClaim, jobCompleteMany, jobInsertMany, queueConfigUpsert, type JobRow } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('concurrency-keys');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const enqueueKeyed = (queue: string, keys: (string | null)[]) =>
  jobInsertMany(t.pool, keys.map((key, i) => ({ organizationId: org, queueName: queue, payload: { i }, concurrencyKey: key })));

const claim = (db: pg.Pool, queue: string, limit: number, workerId = 'w'): Promise<JobRow[]> =>
  jobClaim(db, { organizationId: org, queueName: queue, workerId, limit, leaseSeconds: 60 });

const complete = (db: pg.Pool, jobs: JobRow[]) =>
  jobCompleteMany(db, org, jobs.map((job) => ({ id: job.id, workerId: job.assigned_worker_id!, leaseId: job.lease_id! })));

async function processingPerKey(queue: string): Promise<Map<string | null, number>> {
  const rows = await t.pool.query<{ k: string | null; n: number }>(
    `SELECT concurrency_key AS k, count(*)::int AS n FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 AND status = 'processing' GROUP BY 1`, [org, queue]);
  return new Map(rows.rows.map((r) => [r.k, r.n]));
}

describe('concurrency keys', () => {
  it('never runs more than concurrency_key_limit jobs of one key while 20 claimers claim and complete at once', async () => {
    const queue = 'keyed-race';
    const limit = 2;
    const keys = ['a', 'b', 'c', 'd', 'e'];
    await enqueueKeyed(queue, Array.from({ length: 400 }, (_, i) => keys[i % keys.length]!));
    await queueConfigUpsert(t.pool, org, queue, { concurrencyKeyLimit: limit });
    let done = false;
    let worst = 0;
    let samples = 0;
    // Every committed state is a snapshot some claimer could have seen: none may exceed the limit.
    const monitor = (async () => {
      while (!done) {
        for (const n of (await processingPerKey(queue)).values()) worst = Math.max(worst, n);
        samples += 1;
      }
    })();
    // Pools, not clients: jobClaim takes a client to be inside the caller's transaction already.
    const clients = Array.from({ length: 20 }, () => new pg.Pool({ connectionString: t.url, max: 1 }));
    let completed = 0;
    try {
      await Promise.all(clients.map(async (client, w) => {
        let idle = 0;
        while (idle < 20) {
          const jobs = await claim(client, queue, 3, `w${w}`);
          if (jobs.length === 0) {
            idle += 1;
            await sleep(5);
            continue;
          }
          idle = 0;
          await sleep(1);
          await complete(client, jobs);
          completed += jobs.length;
        }
      }));
    } finally {
      done = true;
      await monitor;
      await Promise.all(clients.map((client) => client.end()));
    }
    assert.equal(completed, 400, 'every job ran once');
    assert.ok(samples > 5, `monitor sampled ${samples} times`);
    assert.ok(worst <= limit, `${worst} jobs of one key processing at once (limit ${limit})`);
    assert.equal(worst, limit, 'the limit was reached, so the test exercised it');
  });

  it('lets the jobs of other keys and unkeyed jobs pass a full key', async () => {
    const queue = 'keyed-pass';
    // Two statements, so every "big" job is older than the others (claim order is priority, created_at).
    await enqueueKeyed(queue, Array.from({ length: 50 }, () => 'big'));
    await enqueueKeyed(queue, ['small', 'small', null]);
    await queueConfigUpsert(t.pool, org, queue, { concurrencyKeyLimit: 1 });
    const claimed: JobRow[] = [];
    for (let i = 0; i < 4; i++) claimed.push(...(await claim(t.pool, queue, 10)));
    assert.deepEqual(claimed.map((job) => job.concurrency_key).sort(), ['big', null, 'small'].sort(),
      'one job per key, and the unkeyed job, however many of "big" wait ahead of them');
    assert.deepEqual(await claim(t.pool, queue, 10), [], 'both keys are full and nothing unkeyed is left');
    await complete(t.pool, claimed.filter((job) => job.concurrency_key === 'small'));
    assert.deepEqual((await claim(t.pool, queue, 10)).map((job) => job.concurrency_key), ['small'], 'a completion frees its key');
    await queueConfigUpsert(t.pool, org, queue, { concurrencyKeyLimit: null });
    assert.equal((await claim(t.pool, queue, 10)).length, 10, 'without the limit: a full batch of "big"');
  });

  it('fills a batch with up to the limit per key, the first of each key in claim order', async () => {
    const queue = 'keyed-batch';
    const keys = ['x', 'x', 'x', 'y', 'y', 'y', 'z'];
    const inserted = await enqueueKeyed(queue, keys);
    await queueConfigUpsert(t.pool, org, queue, { concurrencyKeyLimit: 2 });
    // One statement: the same created_at, so the id decides the claim order.
    const expected = ['x', 'y', 'z'].flatMap((key) => inserted.filter((_, i) => keys[i] === key).map((job) => job.id).sort().slice(0, 2)).sort();
    const jobs = await claim(t.pool, queue, 10);
    assert.deepEqual(jobs.map((job) => job.id).sort(), expected);
  });
});
