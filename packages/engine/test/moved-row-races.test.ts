import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { jobCancelMany, jobClaim, jobCompleteMany, jobFailMany, jobHeartbeat, jobInsertMany } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimOne, historyOf, insertJob, jobRow, waitUntilBlocked } from './helpers.js';

// A job that finishes moves from spool.jobs_live to spool.jobs_done. A
// statement that waited on the row while it moved gets 40001 from
// PostgreSQL; the engine runs it again, and it must then answer as if it had
// come after the finish: no error reaches the caller, nothing is undone.

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('moved_row_races');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: t.url });
  await client.connect();
  return client;
}

async function pidOf(client: pg.Client): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
}

/**
 * Holds the job's row lock, starts `first` and waits until it queues on the
 * lock, then starts `second` behind it, and lets both go: `first` finishes
 * the job while `second` waits on the row it moves.
 */
async function raceBehind<A, B>(id: string, first: (c: pg.Client) => Promise<A>, second: (c: pg.Client) => Promise<B>): Promise<[A, B]> {
  const [gate, a, b] = await Promise.all([connect(), connect(), connect()]);
  try {
    await gate.query('BEGIN');
    await gate.query('SELECT 1 FROM spool.jobs WHERE id = $1 FOR UPDATE', [id]);
    // Asked before the statements start: a client runs one query at a time.
    const [pidA, pidB] = [await pidOf(a), await pidOf(b)];
    const firstDone = first(a);
    await waitUntilBlocked(t.pool, [pidA]);
    const secondDone = second(b);
    await waitUntilBlocked(t.pool, [pidA, pidB]);
    await gate.query('COMMIT');
    return await Promise.all([firstDone, secondDone]);
  } finally {
    await Promise.all([gate.end(), a.end(), b.end()]);
  }
}

describe('a statement waiting on a job that finishes and moves', () => {
  it('a cancel behind a completion answers conflict and the job stays completed', async () => {
    const queue = 'race-cancel';
    const id = await insertJob(t.pool, org, queue);
    const job = await claimOne(t.pool, org, queue, 'w');
    const [completed, cancelled] = await raceBehind(id,
      (c) => jobCompleteMany(c, org, [{ id, workerId: 'w', leaseId: job.lease_id, result: { ok: 1 } }]),
      (c) => jobCancelMany(c, org, [id]));
    assert.equal(completed[0]!.ok, true);
    assert.deepEqual(cancelled.get(id), { outcome: 'conflict', previousStatus: 'completed' });
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'completed');
    assert.deepEqual(row.result, { ok: 1 });
    assert.equal(row.cancel_requested_at, null);
    const events = (await historyOf(t.pool, id)).map((e) => e.event);
    assert.equal(events.filter((e) => e === 'complete').length, 1);
    assert.ok(!events.some((e) => e.startsWith('cancel')), `no cancel in the history: ${events.join(', ')}`);
  });

  it('a heartbeat behind a completion is refused and the job stays completed', async () => {
    const queue = 'race-heartbeat';
    const id = await insertJob(t.pool, org, queue);
    const job = await claimOne(t.pool, org, queue, 'w');
    const [completed, beat] = await raceBehind(id,
      (c) => jobCompleteMany(c, org, [{ id, workerId: 'w', leaseId: job.lease_id }]),
      (c) => jobHeartbeat(c, { organizationId: org, id, workerId: 'w', leaseId: job.lease_id, leaseSeconds: 60 }));
    assert.equal(completed[0]!.ok, true);
    assert.equal(beat.ok, false);
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'completed');
    assert.equal(row.lease_id, null);
  });

  it('a completion behind a dead-lettering failure is refused and the job stays dead-lettered', async () => {
    const queue = 'race-fail';
    const id = await insertJob(t.pool, org, queue, { maxRetries: 0 });
    const job = await claimOne(t.pool, org, queue, 'w');
    const [failed, completed] = await raceBehind(id,
      (c) => jobFailMany(c, org, [{ id, workerId: 'w', leaseId: job.lease_id, error: 'boom' }]),
      (c) => jobCompleteMany(c, org, [{ id, workerId: 'w', leaseId: job.lease_id }]));
    assert.equal(failed[0]!.ok, true);
    assert.equal(completed[0]!.ok, false);
    assert.equal((await jobRow(t.pool, id)).status, 'deadletter');
  });
});

describe('a hot queue: claims meeting jobs that others just finished', () => {
  it('8 connections claiming and completing 1,200 jobs see no error, and each job completes once', async () => {
    const queue = 'race-hot';
    const total = 1_200;
    for (let i = 0; i < total; i += 400) {
      await jobInsertMany(t.pool, Array.from({ length: 400 }, (_, n) => ({ organizationId: org, queueName: queue, payload: { n: i + n } })));
    }
    const pools = Array.from({ length: 8 }, () => new pg.Pool({ connectionString: t.url, max: 1 }));
    const seen = new Map<string, number>();
    try {
      await Promise.all(pools.map(async (pool, n) => {
        const workerId = `w${n}`;
        for (;;) {
          // Small batches keep many claims in flight over rows the others are moving.
          const jobs = await jobClaim(pool, { organizationId: org, queueName: queue, workerId, limit: 3, leaseSeconds: 60 });
          if (jobs.length === 0) return;
          for (const job of jobs) seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
          const outcomes = await jobCompleteMany(pool, org, jobs.map((job) => ({ id: job.id, workerId, leaseId: job.lease_id })));
          assert.ok(outcomes.every((o) => o.ok), `every completion of a held lease succeeds: ${JSON.stringify(outcomes.filter((o) => !o.ok))}`);
        }
      }));
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
    assert.equal(seen.size, total);
    assert.deepEqual([...seen.values()].filter((count) => count !== 1), [], 'no job handed out twice');
    const counts = await t.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 GROUP BY status', [org, queue]);
    assert.deepEqual(counts.rows, [{ status: 'completed', n: total }]);
  });
});
