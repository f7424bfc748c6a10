import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jobCancelMany, jobCompleteMany, jobInsertMany, JobRetention, jobsDonePartitionDropNext, jobsDonePartitionsPremake } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimOne, insertJob } from './helpers.js';

/**
 * Finished jobs in one partition of spool.jobs_done per day their retention
 * window ends on (migration 047): the finishing statements put each job in
 * its day, retention drops a day whole once it is over, and a day without a
 * partition yet is caught by the default partition and moved out.
 */
let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('done-partitions');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

/** The leaf partition that holds a job. */
async function leafOf(id: string): Promise<string> {
  const { rows } = await t.pool.query<{ part: string }>('SELECT tableoid::regclass::text AS part FROM spool.jobs WHERE id = $1', [id]);
  assert.equal(rows.length, 1, `job ${id} exists`);
  return rows[0]!.part;
}

/** The name of the partition for the day `days` from now (UTC). */
async function partitionIn(days: number): Promise<string> {
  const { rows } = await t.pool.query<{ name: string }>(
    `SELECT 'spool.jobs_done_' || to_char(spool.retention_purge_day(now(), $1), 'YYYYMMDD') AS name`, [days]);
  return rows[0]!.name;
}

async function completeOne(queue: string): Promise<string> {
  await insertJob(t.pool, org, queue);
  const job = await claimOne(t.pool, org, queue, 'w');
  const [done] = await jobCompleteMany(t.pool, org, [{ id: job.id, workerId: 'w', leaseId: job.lease_id!, result: null }]);
  assert.ok(done, 'completed');
  return job.id;
}

describe('finished jobs by purge day', () => {
  it('puts a completed or cancelled job in the partition of the day its window ends: the default, or its queue\'s override', async () => {
    await t.pool.query(`INSERT INTO spool.queue_config (organization_id, queue_name, settings) VALUES ($1, 'p-short', '{"retention": {"completed_days": 1, "cancelled_days": 2}}')`, [org]);
    await jobsDonePartitionsPremake(t.pool);
    assert.equal(await leafOf(await completeOne('p-default')), await partitionIn(7));
    assert.equal(await leafOf(await completeOne('p-short')), await partitionIn(1));
    const pending = await insertJob(t.pool, org, 'p-short');
    await jobCancelMany(t.pool, org, [pending]);
    assert.equal(await leafOf(pending), await partitionIn(2));
  });

  it('catches a day without a partition in the default partition, and moves it out when the day is made', async () => {
    await t.pool.query(`INSERT INTO spool.queue_config (organization_id, queue_name, settings) VALUES ($1, 'p-new', '{"retention": {"completed_days": 45}}')`, [org]);
    const id = await completeOne('p-new');
    assert.equal(await leafOf(id), 'spool.jobs_done_default', 'no partition for that day yet');
    assert.ok(await jobsDonePartitionsPremake(t.pool) >= 1);
    assert.equal(await leafOf(id), await partitionIn(45));
    const { rows } = await t.pool.query('SELECT count(*)::int AS n FROM spool.jobs_done_default');
    assert.deepEqual(rows, [{ n: 0 }]);
    assert.equal(await jobsDonePartitionsPremake(t.pool), 0, 'a second premake makes nothing');
  });

  it('makes each partition once when replicas premake at the same time', async () => {
    await t.pool.query(`INSERT INTO spool.queue_config (organization_id, queue_name, settings) VALUES ($1, 'p-race', '{"retention": {"completed_days": 60}}')`, [org]);
    const made = await Promise.all(Array.from({ length: 8 }, () => jobsDonePartitionsPremake(t.pool)));
    assert.equal(made.reduce((a, b) => a + b, 0), 3, `partitions made per call: ${made}`);
  });

  it("drops a day's partition of 100,000 finished jobs in one statement, with what belongs to them, and leaves the live queue and other days untouched", async () => {
    // 100,000 jobs finished 8 days ago (a 7-day window: their day ended yesterday), loaded in one statement.
    const day = `spool.retention_purge_day(now() - interval '8 days', 7)`;
    await t.pool.query(`SELECT spool.jobs_done_partition_ensure(${day})`);
    const name = (await t.pool.query<{ name: string }>(`SELECT 'jobs_done_' || to_char(${day}, 'YYYYMMDD') AS name`)).rows[0]!.name;
    await t.pool.query(`
      INSERT INTO spool.jobs (organization_id, queue_name, status, phase, purge_on, payload, idempotency_key, created_at, started_at, completed_at)
      SELECT $1, 'p-old', 'completed', 'done', ${day}, jsonb_build_object('i', g), CASE WHEN g <= 10 THEN 'old-key-' || g END,
             now() - interval '8 days 1 minute', now() - interval '8 days', now() - interval '8 days'
      FROM generate_series(1, 100000) g`, [org]);
    await t.pool.query(`
      INSERT INTO spool.job_idempotency_keys (organization_id, idempotency_key, job_id)
      SELECT organization_id, idempotency_key, id FROM spool.jobs WHERE organization_id = $1 AND idempotency_key LIKE 'old-key-%'`, [org]);
    const [someOld] = (await t.pool.query<{ id: string }>(`SELECT id FROM spool.jobs WHERE queue_name = 'p-old' LIMIT 1`)).rows;
    await t.pool.query(`INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status) VALUES ($1, $2, 'p-old', 'complete', 'processing', 'completed')`, [org, someOld!.id]);

    // The live queue, and a job finished today that is kept.
    const live = await jobInsertMany(t.pool, Array.from({ length: 50 }, (_, i) => ({ organizationId: org, queueName: 'p-live', payload: { i } })));
    const processing = await claimOne(t.pool, org, 'p-live', 'w');
    const kept = await completeOne('p-kept');
    const liveBefore = (await t.pool.query(`SELECT id, status, xmin::text AS xmin, ctid::text AS ctid FROM spool.jobs_live WHERE organization_id = $1 ORDER BY id`, [org])).rows;

    const dropped = await jobsDonePartitionDropNext(t.pool);
    assert.deepEqual(dropped, { partition: name, jobs: 100_000, history: 1 });
    assert.equal((await t.pool.query('SELECT to_regclass($1) AS r', [`spool.${name}`])).rows[0].r, null, 'the partition is gone');
    assert.equal((await t.pool.query(`SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = 'p-old'`)).rows[0].n, 0);
    assert.equal((await t.pool.query(`SELECT count(*)::int AS n FROM spool.job_idempotency_keys WHERE organization_id = $1 AND idempotency_key LIKE 'old-key-%'`, [org])).rows[0].n, 0, 'their keys are free again');
    assert.equal((await t.pool.query('SELECT count(*)::int AS n FROM spool.job_history WHERE job_id = $1', [someOld!.id])).rows[0].n, 0);

    const liveAfter = (await t.pool.query(`SELECT id, status, xmin::text AS xmin, ctid::text AS ctid FROM spool.jobs_live WHERE organization_id = $1 ORDER BY id`, [org])).rows;
    assert.deepEqual(liveAfter, liveBefore, 'no live row was written');
    assert.ok(liveBefore.length >= live.length);
    assert.equal((await t.pool.query('SELECT status FROM spool.jobs WHERE id = $1', [processing.id])).rows[0].status, 'processing');
    assert.equal(await leafOf(kept), await partitionIn(7), 'a job whose day is not over stays');
    assert.equal(await jobsDonePartitionDropNext(t.pool), null, 'nothing else is due');
  });

  it('retention drops past days (a row of a past day in the default partition too) and counts what went', async () => {
    const id = await completeOne('p-late');
    // As if it had finished 10 days ago while its day had no partition.
    await t.pool.query(`UPDATE spool.jobs SET completed_at = now() - interval '10 days', purge_on = spool.retention_purge_day(now() - interval '10 days', 7) WHERE id = $1`, [id]);
    assert.equal(await leafOf(id), 'spool.jobs_done_default');
    const retention = new JobRetention(t.pool);
    await retention.runOnce();
    assert.equal((await t.pool.query('SELECT count(*)::int AS n FROM spool.jobs WHERE id = $1', [id])).rows[0].n, 0);
    assert.equal(retention.counters.get('partitions_dropped'), 1);
    assert.equal(retention.counters.get('jobs_deleted'), 1);
  });

  it('refuses a finished row without a purge day, so that no job is kept forever', async () => {
    const id = await insertJob(t.pool, org, 'p-refuse');
    await assert.rejects(
      t.pool.query(`UPDATE spool.jobs SET status = 'cancelled', phase = 'done', completed_at = now() WHERE id = $1`, [id]),
      /jobs_done_purge_on_set/);
  });
});
