import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it, mock } from 'node:test';
import pg from 'pg';
import { CLAIM_FLOOR_TTL_MS, JobStatistics, jobClaim, jobInsertMany, jobRescueExpired, queueConfigUpsert, type JobRow } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { expireLease } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('claim-floor');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

async function enqueue(queue: string, count: number, priority = 0): Promise<string[]> {
  const jobs = await jobInsertMany(t.pool, Array.from({ length: count }, (_, i) => ({ organizationId: org, queueName: queue, payload: { i }, priority })));
  return jobs.map((job) => job.id);
}

const claim = (queue: string, limit: number, db: pg.Pool = t.pool): Promise<JobRow[]> =>
  jobClaim(db, { organizationId: org, queueName: queue, workerId: 'w', limit, leaseSeconds: 60 });

/** Puts a claimed job back to pending the way the reaper does for a silent worker. */
async function returnToQueue(id: string): Promise<void> {
  await expireLease(t.pool, id);
  assert.equal((await jobRescueExpired(t.pool, 100)).rescued, 1);
}

describe('claim floor', () => {
  it('still hands out a job that became due again before the floor once the jobs after it run out, in claim order', async () => {
    const queue = 'floor-dry';
    const ids = await enqueue(queue, 3);
    const [first, second] = (await claim(queue, 2)).map((job) => job.id); // a full batch: the floor is at `second`
    const third = ids.find((id) => id !== first && id !== second);
    await returnToQueue(first!);
    assert.deepEqual((await claim(queue, 5)).map((job) => job.id), [first, third]);
  });

  it('puts a higher-priority job enqueued after the floor first', async () => {
    const queue = 'floor-priority';
    await enqueue(queue, 4);
    assert.equal((await claim(queue, 2)).length, 2);
    const [urgent] = await enqueue(queue, 1, 10);
    assert.deepEqual((await claim(queue, 1)).map((job) => job.id), [urgent]);
  });

  it('reads the queue from its start again once the floor is older than CLAIM_FLOOR_TTL_MS, however full the batches', async () => {
    const queue = 'floor-ttl';
    await enqueue(queue, 10);
    const [first] = (await claim(queue, 2)).map((job) => job.id);
    await returnToQueue(first!);
    await sleep(CLAIM_FLOOR_TTL_MS + 100);
    assert.deepEqual((await claim(queue, 1)).map((job) => job.id), [first]);
  });

  for (const capped of [false, true]) it(`drains ${capped ? 'a capped queue (a rate limit and a concurrency limit) ' : ''}past the entries of claimed jobs instead of rereading them while a transaction holds back the xmin horizon`, async () => {
    const queue = capped ? 'floor-xmin-capped' : 'floor-xmin';
    const total = 1000;
    const batch = 50;
    await enqueue(queue, total);
    // As the server's JobStatistics does for a new database: without
    // statistics the planner may read the claim's ranges through a listing
    // index and sort them, reading none of jobs_claim_idx (PostgreSQL 15).
    await new JobStatistics(t.pool).runOnce();
    // Capped claims take the config row's lock and read the floor in one statement.
    if (capped) await queueConfigUpsert(t.pool, org, queue, { rateLimit: 100_000, concurrencyLimit: 100_000 });
    // One connection for the claims, so its statistics can be flushed on demand.
    const claimer = new pg.Pool({ connectionString: t.url, max: 1 });
    const holder = new pg.Client({ connectionString: t.url });
    await holder.connect();
    const entriesRead = async () => {
      await claimer.query('SELECT pg_stat_force_next_flush()');
      await claimer.query('SELECT 1');
      const result = await holder.query<{ n: string }>(
        "SELECT idx_tup_read::text AS n FROM pg_stat_user_indexes WHERE schemaname = 'spool' AND indexrelname = 'jobs_claim_idx'");
      await holder.query('SELECT pg_stat_clear_snapshot()');
      return Number(result.rows[0]!.n);
    };
    try {
      const before = await entriesRead();
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await holder.query('SELECT 1 FROM spool.organizations LIMIT 1');
      let drained = 0;
      // The floor is trusted for CLAIM_FLOOR_TTL_MS, then the queue is read
      // from its start (tested above). A loaded machine can stretch this
      // drain over many such windows, so the clock stands still while it runs:
      // what is measured is the claims within one window.
      mock.timers.enable({ apis: ['Date'], now: Date.now() });
      try {
        for (;;) {
          const jobs = await claim(queue, batch, claimer);
          if (jobs.length === 0) break;
          drained += jobs.length;
        }
      } finally {
        mock.timers.reset();
      }
      assert.equal(drained, total);
      await holder.query('COMMIT');
      const read = (await entriesRead()) - before;
      // Reading from the start each time would pass every earlier claimed
      // job's entry again: about total²/(2·batch) = 10,000 entries here. Far
      // fewer than one entry per job would mean the claims did not use the
      // index (a batch's count can miss the flush: one run read 950).
      assert.ok(read >= total / 2 && read < 3 * total, `claims read ${read} jobs_claim_idx entries to drain ${total} jobs`);
    } finally {
      await holder.end();
      await claimer.end();
    }
  });
});
