import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { jobCancelMany, jobCompleteMany, jobFailMany, jobHeartbeat, jobRescueExpired, type JobRow } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimOne, expireLease, insertJob, jobRow, waitUntilBlocked } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('fencing');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

interface Reclaimed {
  id: string;
  /** The first worker's claim, whose lease expired. */
  stale: JobRow;
  /** The row as the second worker holds it. */
  current: JobRow;
}

/** A job claimed by `old`, whose lease expired, was rescued and then claimed by `new`. */
async function reclaimedJob(queue: string): Promise<Reclaimed> {
  const id = await insertJob(t.pool, org, queue);
  const stale = await claimOne(t.pool, org, queue, 'old-worker');
  await expireLease(t.pool, id);
  const rescued = await jobRescueExpired(t.pool, 1000);
  assert.ok(rescued.rescued >= 1, 'the reaper rescued the job');
  const fresh = await claimOne(t.pool, org, queue, 'new-worker');
  assert.equal(fresh.id, id);
  assert.notEqual(fresh.lease_id, stale.lease_id);
  return { id, stale, current: await jobRow(t.pool, id) };
}

describe('fencing: a worker whose lease expired and was reclaimed', () => {
  it('cannot complete with its old lease id (lease_mismatch) and the row is unchanged', async () => {
    const { id, stale, current } = await reclaimedJob('fence-complete-lease');
    const [outcome] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'old-worker', leaseId: stale.lease_id, result: { late: true } }]);
    assert.deepEqual(outcome, { id, ok: false, reason: 'lease_mismatch' });
    assert.deepEqual(await jobRow(t.pool, id), current);
  });

  it('cannot complete without a lease id (not_owned) and the row is unchanged', async () => {
    const { id, current } = await reclaimedJob('fence-complete-nolease');
    const [outcome] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'old-worker', result: { late: true } }]);
    assert.deepEqual(outcome, { id, ok: false, reason: 'not_owned' });
    assert.deepEqual(await jobRow(t.pool, id), current);
  });

  it('cannot fail with its old lease id (lease_mismatch) and the row is unchanged', async () => {
    const { id, stale, current } = await reclaimedJob('fence-fail-lease');
    const [outcome] = await jobFailMany(t.pool, org, [{ id, workerId: 'old-worker', leaseId: stale.lease_id, error: 'late failure' }]);
    assert.deepEqual(outcome, { id, ok: false, reason: 'lease_mismatch' });
    assert.deepEqual(await jobRow(t.pool, id), current);
  });

  it('cannot fail without a lease id (not_owned) and the row is unchanged', async () => {
    const { id, current } = await reclaimedJob('fence-fail-nolease');
    const [outcome] = await jobFailMany(t.pool, org, [{ id, workerId: 'old-worker', error: 'late failure', retryable: false }]);
    assert.deepEqual(outcome, { id, ok: false, reason: 'not_owned' });
    assert.deepEqual(await jobRow(t.pool, id), current);
  });

  it('cannot heartbeat with its old lease id (lease_mismatch) and the row is unchanged', async () => {
    const { id, stale, current } = await reclaimedJob('fence-heartbeat-lease');
    const outcome = await jobHeartbeat(t.pool, { organizationId: org, id, workerId: 'old-worker', leaseId: stale.lease_id, leaseSeconds: 3600 });
    assert.deepEqual(outcome, { ok: false, reason: 'lease_mismatch' });
    assert.deepEqual(await jobRow(t.pool, id), current);
  });

  it('cannot heartbeat without a lease id (not_owned) and the row is unchanged', async () => {
    const { id, current } = await reclaimedJob('fence-heartbeat-nolease');
    const outcome = await jobHeartbeat(t.pool, { organizationId: org, id, workerId: 'old-worker', leaseSeconds: 3600 });
    assert.deepEqual(outcome, { ok: false, reason: 'not_owned' });
    assert.deepEqual(await jobRow(t.pool, id), current);
  });

  it('cannot use the new owner\'s worker id with its own stale lease id (lease_mismatch)', async () => {
    const { id, stale, current } = await reclaimedJob('fence-stale-lease-new-worker');
    const [outcome] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'new-worker', leaseId: stale.lease_id }]);
    assert.deepEqual(outcome, { id, ok: false, reason: 'lease_mismatch' });
    assert.deepEqual(await jobRow(t.pool, id), current);
  });

  it('leaves the new owner able to complete', async () => {
    const { id, current } = await reclaimedJob('fence-new-owner');
    const [outcome] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'new-worker', leaseId: current.lease_id, result: { ok: 1 } }]);
    assert.equal(outcome?.ok, true);
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'completed');
    assert.deepEqual(row.result, { ok: 1 });
  });
});

describe('fencing under concurrency', () => {
  it('lets exactly one of 5 concurrent completes of one job (separate connections) succeed', async () => {
    const queue = 'concurrent-complete';
    const id = await insertJob(t.pool, org, queue);
    const job = await claimOne(t.pool, org, queue, 'w');
    const clients = await Promise.all(Array.from({ length: 5 }, async () => {
      const client = new pg.Client({ connectionString: t.url });
      await client.connect();
      return client;
    }));
    // A held row lock makes all five queue up on the row, so each re-checks
    // the fence after the winner commits instead of running one after another.
    const gate = new pg.Client({ connectionString: t.url });
    await gate.connect();
    try {
      await gate.query('BEGIN');
      await gate.query('SELECT 1 FROM spool.jobs WHERE id = $1 FOR UPDATE', [id]);
      const pids = await Promise.all(clients.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid));
      const pending = Promise.all(clients.map((client, n) =>
        jobCompleteMany(client, org, [{ id, workerId: 'w', leaseId: job.lease_id, result: { n } }])));
      await waitUntilBlocked(t.pool, pids);
      await gate.query('COMMIT');
      const outcomes = await pending;
      const ok = outcomes.map((o) => o[0]!).filter((o) => o.ok);
      assert.equal(ok.length, 1, `exactly one complete succeeded: ${JSON.stringify(outcomes)}`);
      const history = await t.pool.query<{ count: number }>(`SELECT count(*)::int AS count FROM spool.job_events WHERE job_id = $1 AND event = 'complete'`, [id]);
      assert.equal(history.rows[0]!.count, 1);
      assert.equal((await jobRow(t.pool, id)).status, 'completed');
    } finally {
      await gate.end();
      await Promise.all(clients.map((c) => c.end()));
    }
  });
});


describe('heartbeat', () => {
  it('changes no indexed column of spool.jobs, so it can be a HOT update (migration 009)', async () => {
    // A heartbeat sets lease_expires_at and updated_at. If an index mentions
    // either (key, predicate or expression), every heartbeat writes a new
    // entry into every index of the table.
    const defs = await t.pool.query<{ name: string; def: string }>(
      `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE i.indrelid = 'spool.jobs'::regclass`);
    assert.ok(defs.rows.length > 0);
    const offending = defs.rows.filter((row) => /lease_expires_at|updated_at/.test(row.def)).map((row) => row.name);
    assert.deepEqual(offending, []);
  });

  it('extends lease_expires_at', async () => {
    const queue = 'heartbeat-extends';
    const id = await insertJob(t.pool, org, queue);
    const job = await claimOne(t.pool, org, queue, 'w', 10);
    const outcome = await jobHeartbeat(t.pool, { organizationId: org, id, workerId: 'w', leaseId: job.lease_id, leaseSeconds: 600 });
    assert.equal(outcome.ok, true);
    if (!outcome.ok) return;
    assert.equal(outcome.leaseId, job.lease_id, 'a heartbeat keeps the lease id');
    assert.equal(outcome.cancelRequested, false);
    assert.ok(outcome.leaseExpiresAt.getTime() > job.lease_expires_at!.getTime() + 500_000, 'lease extended by about 600 s');
    assert.equal((await jobRow(t.pool, id)).lease_expires_at!.getTime(), outcome.leaseExpiresAt.getTime());
  });

  it('reports cancelRequested after jobCancelMany on a processing job', async () => {
    const queue = 'heartbeat-cancel';
    const id = await insertJob(t.pool, org, queue);
    const job = await claimOne(t.pool, org, queue, 'w');
    const cancel = await jobCancelMany(t.pool, org, [id]);
    assert.deepEqual(cancel.get(id), { outcome: 'cancel_requested', previousStatus: 'processing' });
    assert.equal((await jobRow(t.pool, id)).status, 'processing', 'a running job keeps running until its worker reports');
    const outcome = await jobHeartbeat(t.pool, { organizationId: org, id, workerId: 'w', leaseId: job.lease_id, leaseSeconds: 30 });
    assert.deepEqual(outcome.ok && outcome.cancelRequested, true);
  });

  it('ends a job as cancelled when its worker fails it after a cancel request', async () => {
    const queue = 'fail-after-cancel';
    const id = await insertJob(t.pool, org, queue);
    const job = await claimOne(t.pool, org, queue, 'w');
    await jobCancelMany(t.pool, org, [id]);
    const [outcome] = await jobFailMany(t.pool, org, [{ id, workerId: 'w', leaseId: job.lease_id, error: 'cancelled by request' }]);
    assert.deepEqual(outcome, { id, ok: true, status: 'cancelled', retryCount: 0, willRetry: false, retryAt: null });
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'cancelled');
    assert.equal(row.lease_id, null);
    assert.ok(row.completed_at);
    const dlq = await t.pool.query('SELECT 1 FROM spool.dead_letter_queue WHERE job_id = $1', [id]);
    assert.equal(dlq.rowCount, 0, 'a cancelled job is not dead-lettered');
  });
});
