import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { jobClaim, jobCompleteMany, jobInsertMany, queueConfigUpsert, queuePause, queueResume } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('claim');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

describe('jobClaim', () => {
  it('hands each of 10,000 jobs to exactly one of 20 concurrent claimers on separate connections', async () => {
    const queue = 'exactly-once';
    const total = 10_000;
    for (let offset = 0; offset < total; offset += 1000) {
      await jobInsertMany(t.pool, Array.from({ length: 1000 }, (_, i) => ({ organizationId: org, queueName: queue, payload: { n: offset + i } })));
    }
    const seen = new Map<string, string>();
    const duplicates: string[] = [];
    await Promise.all(Array.from({ length: 20 }, async (_, w) => {
      const client = new pg.Client({ connectionString: t.url });
      await client.connect();
      try {
        for (;;) {
          const jobs = await jobClaim(client, { organizationId: org, queueName: queue, workerId: `w${w}`, limit: 25, leaseSeconds: 60 });
          if (jobs.length === 0) break;
          for (const job of jobs) {
            if (seen.has(job.id)) duplicates.push(job.id);
            seen.set(job.id, `w${w}`);
          }
        }
      } finally {
        await client.end();
      }
    }));
    assert.deepEqual(duplicates, []);
    assert.equal(seen.size, total);
    const rows = await t.pool.query<{ status: string; count: number }>(`SELECT status, count(*)::int AS count FROM spool.jobs WHERE queue_name = $1 GROUP BY status`, [queue]);
    assert.deepEqual(rows.rows, [{ status: 'processing', count: total }]);
    const claims = await t.pool.query<{ count: number }>(`SELECT count(*)::int AS count FROM spool.job_events WHERE queue_name = $1 AND event = 'claim'`, [queue]);
    assert.equal(claims.rows[0]!.count, total);
  });

  it('never lets a queue with a concurrency_limit run more than its limit, however many claim at once', async () => {
    const queue = 'capped';
    await jobInsertMany(t.pool, Array.from({ length: 50 }, (_, i) => ({ organizationId: org, queueName: queue, payload: { i } })));
    await queueConfigUpsert(t.pool, org, queue, { concurrencyLimit: 3 });
    const processing = async () => (await t.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = $1 AND status = 'processing'`, [queue])).rows[0]!.n;
    const clients = Array.from({ length: 12 }, () => new pg.Pool({ connectionString: t.url, max: 1 }));
    try {
      const claimRound = () => Promise.all(clients.map((pool, w) => jobClaim(pool, { organizationId: org, queueName: queue, workerId: `w${w}`, limit: 5, leaseSeconds: 60 })));
      const first = (await claimRound()).flat();
      assert.equal(first.length, 3, 'twelve concurrent claimers of five share the three free places');
      assert.equal(await processing(), 3);
      await jobCompleteMany(t.pool, org, first.slice(0, 2).map((job) => ({ id: job.id, workerId: job.assigned_worker_id!, leaseId: job.lease_id! })));
      const second = (await claimRound()).flat();
      assert.equal(second.length, 2, 'two completions free two places');
      assert.equal(await processing(), 3);
      await queueConfigUpsert(t.pool, org, queue, { concurrencyLimit: null });
      const uncapped = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 10, leaseSeconds: 60 });
      assert.equal(uncapped.length, 10, 'no limit any more: the fast path claims a full batch');
    } finally {
      await Promise.all(clients.map((pool) => pool.end()));
    }
  });

  it('orders by priority descending, then by age', async () => {
    const queue = 'ordering';
    const inserted = [];
    for (const priority of [0, 5, -3, 5, 0, 100]) {
      const [job] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: queue, payload: { priority }, priority }]);
      inserted.push({ id: job!.id, priority });
    }
    const claimed = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 100, leaseSeconds: 30 });
    const expected = [...inserted].sort((a, b) => b.priority - a.priority).map((j) => j.id);
    assert.deepEqual(claimed.map((j) => j.id), expected);
  });

  it('gives each claimed job a distinct lease id and a lease within 5..3600 s', async () => {
    const queue = 'leases';
    await jobInsertMany(t.pool, [1, 2, 3].map((n) => ({ organizationId: org, queueName: queue, payload: n })));
    const claimed = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 3, leaseSeconds: 1 });
    assert.equal(new Set(claimed.map((j) => j.lease_id)).size, 3);
    for (const job of claimed) {
      const seconds = (job.lease_expires_at!.getTime() - Date.now()) / 1000;
      assert.ok(seconds > 3 && seconds <= 5.5, `lease clamped to 5 s, got ${seconds}`);
      assert.equal(job.assigned_worker_id, 'w');
      assert.ok(job.started_at);
    }
  });

  it('does not claim a scheduled job before its time, and claims it once it is due', async () => {
    const queue = 'scheduled';
    const at = new Date(Date.now() + 700);
    const [job] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: queue, payload: {}, scheduledAt: at }]);
    assert.equal(job!.status, 'scheduled');
    const { ScheduledPromoter } = await import('@spool/engine');
    const promoter = new ScheduledPromoter(t.pool);
    promoter.start();
    try {
      // Before its time: nothing to claim.
      assert.deepEqual(await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 1, leaseSeconds: 30 }), []);
      let claimed: Awaited<ReturnType<typeof jobClaim>> = [];
      while (claimed.length === 0 && Date.now() < at.getTime() + 2000) {
        claimed = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 1, leaseSeconds: 30 });
        if (claimed.length === 0) await new Promise((r) => setTimeout(r, 5));
      }
      assert.equal(claimed.length, 1, 'the job was claimed');
      // When it became claimable is recorded by the database (the promote
      // transition's timestamp), independent of how busy this test process is.
      const promote = await t.pool.query<{ created_at: Date }>(`SELECT created_at FROM spool.job_history WHERE job_id = $1 AND event = 'promote'`, [job!.id]);
      const lateness = promote.rows[0]!.created_at.getTime() - at.getTime();
      assert.ok(lateness >= 0, `promoted ${-lateness} ms early`);
      // The 100 ms target is measured where no other test file competes for
      // the two cores: packages/server/test/scheduler-precision.serial.test.ts.
      // Here it only has to be promoted by its own timer, not a sweep.
      assert.ok(lateness <= 1000, `promoted ${lateness} ms after its time`);
    } finally {
      await promoter.stop();
    }
  });

  it('yields nothing from a paused queue and yields again once resumed', async () => {
    const queue = 'pausable';
    await jobInsertMany(t.pool, [{ organizationId: org, queueName: queue, payload: {} }]);
    await queuePause(t.pool, org, queue, 'maintenance');
    assert.deepEqual(await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 10, leaseSeconds: 30 }), []);
    const resumed = await queueResume(t.pool, org, queue);
    assert.ok(resumed && resumed.enabled);
    const claimed = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 10, leaseSeconds: 30 });
    assert.equal(claimed.length, 1);
  });

  it('never claims an expired job', async () => {
    const queue = 'expiring';
    await jobInsertMany(t.pool, [{ organizationId: org, queueName: queue, payload: {}, expiresAt: new Date(Date.now() + 150) }]);
    await new Promise((r) => setTimeout(r, 250));
    assert.deepEqual(await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 10, leaseSeconds: 30 }), []);
  });

  it('only claims jobs of the given organization and queue', async () => {
    const other = await createOrganization(t.pool);
    await jobInsertMany(t.pool, [{ organizationId: other, queueName: 'shared-name', payload: {} }]);
    assert.deepEqual(await jobClaim(t.pool, { organizationId: org, queueName: 'shared-name', workerId: 'w', limit: 10, leaseSeconds: 30 }), []);
    assert.equal((await jobClaim(t.pool, { organizationId: other, queueName: 'shared-name', workerId: 'w', limit: 10, leaseSeconds: 30 })).length, 1);
  });
});

/**
 * The lease update and its history rows, as one claim statement writes them:
 * comments and spacing aside. PostgreSQL SQL has no include, and a function
 * around them would be planned apart from the statement, so each claim
 * (job-claim.sql, job-claim-capped.sql, job-claim-queues.sql) holds its own
 * copy; this keeps the copies one.
 */
function leaseBlock(file: string): string {
  const text = readFileSync(new URL(`../src/ops/${file}`, import.meta.url), 'utf8').replace(/--[^\n]*/g, '');
  const block = /\bclaimed AS \([\s\S]*?\n\),\s*history AS \([\s\S]*?\n\)/.exec(text);
  assert.ok(block, `${file} has a claimed and a history CTE`);
  return block[0].replace(/\s+/g, ' ');
}

describe('claim statements', () => {
  it('lease and record their jobs with the same SQL, every one of them', () => {
    const single = leaseBlock('job-claim.sql');
    assert.match(single, /UPDATE spool\.jobs_live j SET status = 'processing'/);
    assert.equal(leaseBlock('job-claim-capped.sql'), single, 'job-claim-capped.sql');
    assert.equal(leaseBlock('job-claim-queues.sql'), single, 'job-claim-queues.sql');
  });
});
