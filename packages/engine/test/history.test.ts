import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  dlqPurge, jobCancelMany, jobClaim, jobCompleteMany, jobExpire, jobFailMany, jobInsertMany, jobPromoteScheduled, jobReleaseWorker,
  historyTail, jobHistory, jobRescueExpired, jobRetryMany, queueConfigUpsert,
} from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimOne, expireLease, historyOf, insertJob, type HistoryRow } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('history');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

type Expected = Omit<HistoryRow, 'id' | 'message'> & { message?: string | null };

/**
 * Follows one job's timeline (what GET /jobs/{id}/history answers; of a job
 * deleted by a purge, the events left in the log): `step` runs a transition
 * and asserts that it added exactly the expected entries, each with an id
 * above every earlier one.
 */
class HistoryTracker {
  #seen: HistoryRow[] = [];
  constructor(readonly jobId: string) {}

  async step(expected: Expected[]): Promise<void> {
    const exists = (await t.pool.query('SELECT 1 FROM spool.jobs WHERE id = $1', [this.jobId])).rowCount === 1;
    const all: HistoryRow[] = exists
      // actor and details (migration 031) are the API's to set: the server tests check them.
      ? (await jobHistory(t.pool, org, this.jobId, 1000)).map(({ created_at: _at, actor: _actor, details: _details, ...entry }) => entry)
      : await historyOf(t.pool, this.jobId);
    assert.deepEqual(all.slice(0, this.#seen.length), this.#seen, 'earlier history rows are unchanged');
    const added = all.slice(this.#seen.length);
    const lastId = this.#seen.at(-1)?.id ?? 0;
    for (const row of added) assert.ok(row.id > lastId, `history id ${row.id} follows ${lastId}`);
    assert.deepEqual(added.map((row) => shape(row, expected)), expected);
    this.#seen = all;
  }
}

/** The row's fields that `expected` mentions (message only when asked for). */
function shape(row: HistoryRow, expected: Expected[]): Expected {
  const { id: _id, message, ...rest } = row;
  return expected.some((e) => 'message' in e) ? { ...rest, message } : rest;
}

const none = { worker_id: null, lease_id: null };

async function tracked(queue: string, extra: Parameters<typeof insertJob>[3] = {}): Promise<HistoryTracker> {
  const id = await insertJob(t.pool, org, queue, extra);
  const tracker = new HistoryTracker(id);
  await tracker.step([{ event: 'create', from_status: null, to_status: extra.scheduledAt ? 'scheduled' : 'pending', ...none }]);
  return tracker;
}

describe('job_history', () => {
  it('create, claim, complete', async () => {
    const h = await tracked('h-complete');
    const job = await claimOne(t.pool, org, 'h-complete', 'w1');
    await h.step([{ event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'w1', lease_id: job.lease_id }]);
    await jobCompleteMany(t.pool, org, [{ id: h.jobId, workerId: 'w1', leaseId: job.lease_id }]);
    await h.step([{ event: 'complete', from_status: 'processing', to_status: 'completed', worker_id: 'w1', lease_id: job.lease_id }]);
  });

  it('create, claim, fail_retry, claim, fail_final', async () => {
    const queue = 'h-fail';
    await queueConfigUpsert(t.pool, org, queue, { backoffBaseMs: 0, backoffMaxMs: 0, backoffJitterMs: 0 });
    const h = await tracked(queue, { maxRetries: 1 });
    const first = await claimOne(t.pool, org, queue, 'w1');
    await h.step([{ event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'w1', lease_id: first.lease_id }]);
    await jobFailMany(t.pool, org, [{ id: h.jobId, workerId: 'w1', leaseId: first.lease_id, error: 'first' }]);
    await h.step([{ event: 'fail_retry', from_status: 'processing', to_status: 'pending', worker_id: 'w1', lease_id: first.lease_id, message: 'first' }]);
    const second = await claimOne(t.pool, org, queue, 'w2');
    await h.step([{ event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'w2', lease_id: second.lease_id }]);
    await jobFailMany(t.pool, org, [{ id: h.jobId, workerId: 'w2', leaseId: second.lease_id, error: 'second' }]);
    await h.step([{ event: 'fail_final', from_status: 'processing', to_status: 'deadletter', worker_id: 'w2', lease_id: second.lease_id, message: 'second' }]);
  });

  it('cancel of a pending job', async () => {
    const h = await tracked('h-cancel');
    await jobCancelMany(t.pool, org, [h.jobId]);
    await h.step([{ event: 'cancel', from_status: 'pending', to_status: 'cancelled', ...none }]);
    await jobCancelMany(t.pool, org, [h.jobId]);
    await h.step([]);
  });

  it('cancel of a running job: one cancel_requested row however often asked, then fail_final to cancelled', async () => {
    const h = await tracked('h-cancel-running');
    const job = await claimOne(t.pool, org, 'h-cancel-running', 'w1');
    await h.step([{ event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'w1', lease_id: job.lease_id }]);
    await jobCancelMany(t.pool, org, [h.jobId]);
    await h.step([{ event: 'cancel_requested', from_status: 'processing', to_status: 'processing', worker_id: 'w1', lease_id: job.lease_id }]);
    const again = await jobCancelMany(t.pool, org, [h.jobId]);
    assert.equal(again.get(h.jobId)?.outcome, 'cancel_requested');
    await h.step([]);
    await jobFailMany(t.pool, org, [{ id: h.jobId, workerId: 'w1', leaseId: job.lease_id, error: 'stopped' }]);
    await h.step([{ event: 'fail_final', from_status: 'processing', to_status: 'cancelled', worker_id: 'w1', lease_id: job.lease_id }]);
  });

  it('promote', async () => {
    const at = new Date(Date.now() + 500);
    const h = await tracked('h-promote', { scheduledAt: at });
    await new Promise((r) => setTimeout(r, at.getTime() - Date.now() + 50));
    assert.ok((await jobPromoteScheduled(t.pool, 1000)) >= 1);
    await h.step([{ event: 'promote', from_status: 'scheduled', to_status: 'pending', ...none }]);
  });

  it('lease_expired', async () => {
    const h = await tracked('h-lease');
    const job = await claimOne(t.pool, org, 'h-lease', 'w1');
    await h.step([{ event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'w1', lease_id: job.lease_id }]);
    await expireLease(t.pool, h.jobId);
    await jobRescueExpired(t.pool, 1000);
    await h.step([{ event: 'lease_expired', from_status: 'processing', to_status: 'pending', worker_id: 'w1', lease_id: job.lease_id, message: 'Lease expired (worker timeout)' }]);
  });

  it('retry of a dead-lettered job', async () => {
    const h = await tracked('h-retry', { maxRetries: 0 });
    const job = await claimOne(t.pool, org, 'h-retry', 'w1');
    await jobFailMany(t.pool, org, [{ id: h.jobId, workerId: 'w1', leaseId: job.lease_id, error: 'x' }]);
    await h.step([
      { event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'w1', lease_id: job.lease_id },
      { event: 'fail_final', from_status: 'processing', to_status: 'deadletter', worker_id: 'w1', lease_id: job.lease_id },
    ]);
    await jobRetryMany(t.pool, { organizationId: org, ids: [h.jobId], resetRetryCount: true, from: ['deadletter'] });
    await h.step([{ event: 'retry', from_status: 'deadletter', to_status: 'pending', ...none }]);
  });

  it('release (jobReleaseWorker)', async () => {
    const h = await tracked('h-release');
    const job = await claimOne(t.pool, org, 'h-release', 'leaving-worker');
    await h.step([{ event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'leaving-worker', lease_id: job.lease_id }]);
    assert.equal(await jobReleaseWorker(t.pool, org, 'leaving-worker', 'worker deregistered'), 1);
    await h.step([{ event: 'release', from_status: 'processing', to_status: 'pending', worker_id: 'leaving-worker', lease_id: job.lease_id, message: 'worker deregistered' }]);
  });

  it('release after a cancel request ends the job cancelled', async () => {
    const h = await tracked('h-release-cancel');
    const job = await claimOne(t.pool, org, 'h-release-cancel', 'leaving-worker-2');
    await jobCancelMany(t.pool, org, [h.jobId]);
    await h.step([
      { event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'leaving-worker-2', lease_id: job.lease_id },
      { event: 'cancel_requested', from_status: 'processing', to_status: 'processing', worker_id: 'leaving-worker-2', lease_id: job.lease_id },
    ]);
    await jobReleaseWorker(t.pool, org, 'leaving-worker-2', 'shutdown');
    await h.step([{ event: 'release', from_status: 'processing', to_status: 'cancelled', worker_id: 'leaving-worker-2', lease_id: job.lease_id }]);
    const row = await t.pool.query('SELECT status, completed_at FROM spool.jobs WHERE id = $1', [h.jobId]);
    assert.equal(row.rows[0].status, 'cancelled');
    assert.ok(row.rows[0].completed_at);
  });

  it('purge', async () => {
    const h = await tracked('h-purge', { maxRetries: 0 });
    const job = await claimOne(t.pool, org, 'h-purge', 'w1');
    await jobFailMany(t.pool, org, [{ id: h.jobId, workerId: 'w1', leaseId: job.lease_id, error: 'x', retryable: false }]);
    await h.step([
      { event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'w1', lease_id: job.lease_id },
      { event: 'fail_final', from_status: 'processing', to_status: 'deadletter', worker_id: 'w1', lease_id: job.lease_id },
    ]);
    assert.equal(await dlqPurge(t.pool, { organizationId: org, queueName: 'h-purge', limit: 10 }), 1);
    await h.step([{ event: 'purge', from_status: 'deadletter', to_status: null, ...none }]);
  });

  it('expire', async () => {
    const h = await tracked('h-expire', { expiresAt: new Date(Date.now() + 50) });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await jobExpire(t.pool, 1000), 1);
    const [row] = (await historyOf(t.pool, h.jobId)).slice(-1);
    assert.match(row!.message ?? '', /^Expired: /);
    await h.step([{ event: 'expire', from_status: 'pending', to_status: 'cancelled', ...none, message: row!.message }]);
  });

  it('a refused (fenced) complete or fail writes no history', async () => {
    const h = await tracked('h-refused');
    const job = await claimOne(t.pool, org, 'h-refused', 'w1');
    await h.step([{ event: 'claim', from_status: 'pending', to_status: 'processing', worker_id: 'w1', lease_id: job.lease_id }]);
    const [complete] = await jobCompleteMany(t.pool, org, [{ id: h.jobId, workerId: 'intruder' }]);
    const [fail] = await jobFailMany(t.pool, org, [{ id: h.jobId, workerId: 'w1', leaseId: '00000000-0000-7000-8000-000000000000', error: 'x' }]);
    assert.equal(complete!.ok, false);
    assert.equal(fail!.ok, false);
    await h.step([]);
  });

  it('one enqueue, claim and completion of several jobs each write one row for all of them, each job its own event id', async () => {
    const queue = 'h-batch';
    const inserted = await jobInsertMany(t.pool, [1, 2, 3].map((n) => ({ organizationId: org, queueName: queue, payload: { n } })));
    const claimed = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 10, leaseSeconds: 30 });
    assert.equal(claimed.length, 3);
    await jobCompleteMany(t.pool, org, claimed.map((j) => ({ id: j.id, workerId: 'w', leaseId: j.lease_id! })));
    const rows = await t.pool.query<{ event: string; job_id: string | null; jobs: number }>(
      'SELECT event, job_id, cardinality(job_ids) AS jobs FROM spool.job_history WHERE queue_name = $1 ORDER BY id', [queue]);
    assert.deepEqual(rows.rows, ['create', 'claim', 'complete'].map((event) => ({ event, job_id: null, jobs: 3 })));
    const events = await t.pool.query<{ event_id: number; job_id: string; event: string; lease_id: string | null }>(
      'SELECT event_id, job_id, event, lease_id FROM spool.job_events WHERE queue_name = $1 ORDER BY event_id', [queue]);
    assert.deepEqual(events.rows.map((r) => r.event), ['create', 'create', 'create', 'claim', 'claim', 'claim', 'complete', 'complete', 'complete']);
    assert.equal(new Set(events.rows.map((r) => r.event_id)).size, 9, 'every event has its own id');
    const leases = new Map(claimed.map((j) => [j.id, j.lease_id]));
    for (const claim of events.rows.filter((r) => r.event === 'claim')) assert.equal(claim.lease_id, leases.get(claim.job_id));
    // Each job's timeline (GET /jobs/{id}/history) is what it was with a row per job.
    for (const job of claimed) {
      const timeline = await jobHistory(t.pool, org, job.id, 100);
      assert.deepEqual(timeline.map((e) => [e.event, e.to_status, e.worker_id, e.lease_id]), [
        ['create', 'pending', null, null],
        ['claim', 'processing', 'w', job.lease_id],
        ['complete', 'completed', 'w', job.lease_id],
      ]);
      assert.deepEqual(timeline.map((e) => e.id), (await historyOf(t.pool, job.id)).map((e) => e.id), 'the timeline carries the event ids');
    }
  });

  it('a tail read stops at about its limit of events, however many jobs its rows hold', async () => {
    const start = Number((await t.pool.query('SELECT coalesce(max(id), 0) AS id FROM spool.job_history')).rows[0].id);
    for (let batch = 0; batch < 5; batch++) {
      await jobInsertMany(t.pool, [1, 2, 3, 4].map((n) => ({ organizationId: org, queueName: 'h-tail', payload: { batch, n } })));
    }
    const read = await historyTail(t.pool, start, [], 10);
    const rows = new Set(read.events.map((e) => e.log_id));
    assert.equal(rows.size, 3, 'rows while fewer than 10 events came before them');
    assert.equal(read.events.length, 12);
    assert.deepEqual(read.events.map((e) => e.id), [...read.events.map((e) => e.id)].sort((a, b) => a - b), 'in event order');
    const one = await historyTail(t.pool, start, [], 1);
    assert.equal(new Set(one.events.map((e) => e.log_id)).size, 1, 'the first row always comes, whole');
    assert.equal(one.events.length, 4);
  });
});
