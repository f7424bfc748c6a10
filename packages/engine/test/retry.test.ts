import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  LeaseReaper, dlqList, dlqPurge, jobCancelMany, jobClaim, jobCompleteMany, jobExpire, jobFailMany, jobInsertMany, jobRescueExpired,
  jobPromoteScheduled, jobRetryMany, jobSetPriority, queueConfigUpsert,
} from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimOne, expireLease, insertJob, jobRow } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('retry');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function claimable(queue: string): Promise<number> {
  const jobs = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'probe', limit: 100, leaseSeconds: 30 });
  return jobs.length;
}

async function dlqRow(jobId: string): Promise<{ queue_name: string; payload: unknown; error: string | null; retry_count: number } | undefined> {
  const result = await t.pool.query('SELECT queue_name, payload, error, retry_count FROM spool.dead_letter_queue WHERE job_id = $1', [jobId]);
  return result.rows[0];
}

/** Inserts, claims and fails one job; returns its id and the fail outcome. */
async function failOnce(queue: string, extra: { maxRetries?: number; retryable?: boolean } = {}) {
  const id = await insertJob(t.pool, org, queue, { maxRetries: extra.maxRetries ?? 3, payload: { queue } });
  const job = await claimOne(t.pool, org, queue, 'w');
  const [outcome] = await jobFailMany(t.pool, org, [{ id, workerId: 'w', leaseId: job.lease_id, error: 'boom', retryable: extra.retryable }]);
  assert.ok(outcome?.ok, 'fail accepted');
  return { id, outcome };
}

/** Milliseconds between the failure (updated_at = the statement's now()) and the retry time. */
async function retryDelayMs(id: string): Promise<number> {
  const row = await jobRow(t.pool, id);
  return row.scheduled_at!.getTime() - row.updated_at.getTime();
}

describe('spool.backoff_ms', () => {
  it('is min(1000·2^n, 60000) plus jitter in [0, 500) for attempts 0..10 with the default parameters', async () => {
    // Raw samples, aggregated here: a LATERAL form lets the planner
    // materialize the volatile call and repeat one draw.
    const result = await t.pool.query<{ attempt: number; d: number }>(`
      SELECT attempt, spool.backoff_ms(attempt, 1000, 60000, 500) AS d
      FROM generate_series(0, 10) AS attempt CROSS JOIN generate_series(1, 300) AS sample`);
    const byAttempt = new Map<number, number[]>();
    for (const { attempt, d } of result.rows) byAttempt.set(attempt, [...(byAttempt.get(attempt) ?? []), d]);
    const rows = [...byAttempt].map(([attempt, ds]) => ({ attempt, lo: Math.min(...ds), hi: Math.max(...ds), n: ds.length }));
    assert.deepEqual(rows.map((r) => [r.attempt, r.n]), Array.from({ length: 11 }, (_, n) => [n, 300]));
    for (const { attempt, lo, hi } of rows) {
      const base = Math.min(1000 * 2 ** attempt, 60_000);
      assert.ok(lo >= base, `attempt ${attempt}: ${lo} >= ${base}`);
      assert.ok(hi < base + 500, `attempt ${attempt}: ${hi} < ${base + 500}`);
      // 300 uniform draws over 500 ms: a spread under 250 ms has probability ~1e-88.
      assert.ok(hi - lo > 250, `attempt ${attempt}: jitter spreads the delays (${lo}..${hi})`);
    }
  });

  it('follows its parameters: no jitter is exact, negative attempts count as 0, huge attempts hit the cap', async () => {
    const result = await t.pool.query<{ a: number; b: number; c: number; d: number }>(`SELECT
      spool.backoff_ms(3, 250, 100000, 0) AS a,
      spool.backoff_ms(-5, 250, 100000, 0) AS b,
      spool.backoff_ms(1000, 250, 100000, 0) AS c,
      spool.backoff_ms(2, 0, 100000, 0) AS d`);
    assert.deepEqual(result.rows[0], { a: 2000, b: 250, c: 100000, d: 0 });
  });
});

describe('fail with retries left', () => {
  it('puts the job back to pending with retry_count + 1 and scheduled_at = now + backoff', async () => {
    const { id, outcome } = await failOnce('retry-default');
    assert.equal(outcome!.ok && outcome.status, 'pending');
    assert.equal(outcome!.ok && outcome.willRetry, true);
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'pending');
    assert.equal(row.retry_count, 1);
    assert.equal(row.last_error, 'boom');
    assert.equal(row.lease_id, null);
    assert.equal(row.assigned_worker_id, null);
    assert.equal(row.completed_at, null);
    const delay = await retryDelayMs(id);
    assert.ok(delay >= 1000 && delay < 1500, `first retry after 1 s + jitter, got ${delay} ms`);
    assert.equal(outcome!.ok && outcome.retryAt?.getTime(), row.scheduled_at!.getTime());
  });

  it('does not hand the job out before its retry time, and does after', async () => {
    const queue = 'retry-wait';
    // Long enough that a slow, shared machine still probes within the backoff.
    await queueConfigUpsert(t.pool, org, queue, { backoffBaseMs: 1000, backoffMaxMs: 1000, backoffJitterMs: 0 });
    const { id } = await failOnce(queue);
    assert.equal(await claimable(queue), 0, 'not claimable during the backoff');
    const row = await jobRow(t.pool, id);
    await sleep(Math.max(0, row.scheduled_at!.getTime() - Date.now()) + 50);
    // Out of the claim index until the promoter ends the backoff (docs/design.md §4:
    // jobs waiting to retry must not slow every claim).
    assert.equal(await claimable(queue), 0, 'still in backoff until promoted');
    assert.ok((await jobPromoteScheduled(t.pool, 1000)) >= 1);
    assert.equal((await jobRow(t.pool, id)).status, 'pending');
    const [job] = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w2', limit: 1, leaseSeconds: 30 });
    assert.equal(job?.id, id);
    assert.equal(job.retry_count, 1);
  });

  it('uses the queue config backoff: base doubling per attempt up to its cap, with its jitter', async () => {
    const queue = 'retry-configured';
    await queueConfigUpsert(t.pool, org, queue, { backoffBaseMs: 40, backoffMaxMs: 100, backoffJitterMs: 0 });
    const id = await insertJob(t.pool, org, queue, { maxRetries: 5 });
    const delays: number[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const row = await jobRow(t.pool, id);
      if (row.scheduled_at) await sleep(Math.max(0, row.scheduled_at.getTime() - Date.now()) + 20);
      await jobPromoteScheduled(t.pool, 1000);
      const job = await claimOne(t.pool, org, queue, 'w');
      await jobFailMany(t.pool, org, [{ id, workerId: 'w', leaseId: job.lease_id, error: `attempt ${attempt}` }]);
      delays.push(await retryDelayMs(id));
    }
    assert.deepEqual(delays, [40, 80, 100]);
    assert.equal((await jobRow(t.pool, id)).retry_count, 3);
  });
});

describe('dead-lettering', () => {
  it('dead-letters a job with max_retries 0 on its first failure, with a dead_letter_queue row', async () => {
    const { id, outcome } = await failOnce('dlq-zero', { maxRetries: 0 });
    assert.deepEqual(outcome, { id, ok: true, status: 'deadletter', retryCount: 0, willRetry: false, retryAt: null });
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'deadletter');
    assert.equal(row.lease_id, null);
    assert.ok(row.completed_at);
    assert.deepEqual(await dlqRow(id), { queue_name: 'dlq-zero', payload: { queue: 'dlq-zero' }, error: 'boom', retry_count: 0 });
  });

  it('dead-letters a non-retryable failure even with retries left', async () => {
    const { id, outcome } = await failOnce('dlq-nonretryable', { maxRetries: 5, retryable: false });
    assert.equal(outcome!.ok && outcome.status, 'deadletter');
    assert.equal((await jobRow(t.pool, id)).retry_count, 0);
    assert.equal((await dlqRow(id))?.error, 'boom');
  });

  it('lists dead-lettered jobs of the organization, optionally by queue', async () => {
    const { id } = await failOnce('dlq-listed', { maxRetries: 0 });
    const listed = await dlqList(t.pool, { organizationId: org, queueName: 'dlq-listed', limit: 10, offset: 0 });
    assert.deepEqual(listed.map((j) => j.id), [id]);
    const other = await createOrganization(t.pool);
    assert.deepEqual(await dlqList(t.pool, { organizationId: other, limit: 10, offset: 0 }), []);
  });
});

describe('lease reaper', () => {
  it('returns a job whose lease expired to pending with retry_count + 1 and says why', async () => {
    const queue = 'reaper-retry';
    const id = await insertJob(t.pool, org, queue);
    await claimOne(t.pool, org, queue, 'dead-worker');
    await expireLease(t.pool, id);
    const reaper = new LeaseReaper(t.pool);
    await reaper.runOnce();
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'pending');
    assert.equal(row.retry_count, 1);
    assert.equal(row.last_error, 'Lease expired (worker timeout)');
    assert.equal(row.lease_id, null);
    assert.equal(row.assigned_worker_id, null);
    assert.equal(reaper.counters.get('rescued'), 1);
    assert.equal(await claimable(queue), 1, 'claimable again at once');
  });

  it('dead-letters a job whose lease expired with no retries left', async () => {
    const queue = 'reaper-dlq';
    const id = await insertJob(t.pool, org, queue, { maxRetries: 0 });
    await claimOne(t.pool, org, queue, 'dead-worker');
    await expireLease(t.pool, id);
    assert.deepEqual(await jobRescueExpired(t.pool, 1000), { rescued: 1, deadlettered: 1 });
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'deadletter');
    assert.equal(row.retry_count, 0);
    assert.equal(row.last_error, 'Lease expired (worker timeout)');
    assert.equal((await dlqRow(id))?.error, 'Lease expired (worker timeout)');
  });

  it('leaves a job whose lease has not expired alone', async () => {
    const queue = 'reaper-live';
    const id = await insertJob(t.pool, org, queue);
    await claimOne(t.pool, org, queue, 'live-worker', 5);
    const before = await jobRow(t.pool, id);
    assert.deepEqual(await jobRescueExpired(t.pool, 1000), { rescued: 0, deadlettered: 0 });
    assert.deepEqual(await jobRow(t.pool, id), before);
  });

  it('ends a job cancelled, not retried, when its lease expires after a cancel request', async () => {
    const queue = 'reaper-cancel-requested';
    const id = await insertJob(t.pool, org, queue);
    await claimOne(t.pool, org, queue, 'dead-worker');
    await jobCancelMany(t.pool, org, [id]);
    await expireLease(t.pool, id);
    await jobRescueExpired(t.pool, 1000);
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'cancelled');
    assert.ok(row.completed_at);
    assert.equal(await claimable(queue), 0, 'a cancelled job never runs again');
    assert.equal(await dlqRow(id), undefined);
  });
});

describe('manual retry and DLQ', () => {
  it('manual retry (resetRetryCount false) makes a dead-lettered job pending and claimable with retry_count + 1', async () => {
    const queue = 'manual-retry';
    const { id } = await failOnce(queue, { maxRetries: 0 });
    const rows = await jobRetryMany(t.pool, { organizationId: org, ids: [id], resetRetryCount: false, from: ['failed', 'deadletter'] });
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.status, 'pending');
    assert.equal(rows[0]!.retry_count, 1);
    assert.equal(rows[0]!.last_error, null);
    assert.equal(rows[0]!.scheduled_at, null);
    assert.equal(await dlqRow(id), undefined, 'the DLQ row is gone');
    assert.equal(await claimable(queue), 1);
  });

  it('manual retry refuses jobs that are not failed or dead-lettered', async () => {
    const id = await insertJob(t.pool, org, 'manual-retry-pending');
    assert.deepEqual(await jobRetryMany(t.pool, { organizationId: org, ids: [id], resetRetryCount: false, from: ['failed', 'deadletter'] }), []);
    assert.deepEqual(await jobRetryMany(t.pool, { organizationId: org, ids: ['not-a-uuid'], resetRetryCount: false, from: ['deadletter'] }), []);
  });

  it('DLQ retry (resetRetryCount true) resets retry_count to 0, selecting by queue', async () => {
    const queue = 'dlq-retry';
    await queueConfigUpsert(t.pool, org, queue, { backoffBaseMs: 0, backoffMaxMs: 0, backoffJitterMs: 0 });
    const id = await insertJob(t.pool, org, queue, { maxRetries: 1 });
    for (let i = 0; i < 2; i++) {
      const job = await claimOne(t.pool, org, queue, 'w');
      await jobFailMany(t.pool, org, [{ id, workerId: 'w', leaseId: job.lease_id, error: `e${i}` }]);
    }
    const dead = await jobRow(t.pool, id);
    assert.equal(dead.status, 'deadletter');
    assert.equal(dead.retry_count, 1);
    const rows = await jobRetryMany(t.pool, { organizationId: org, queueName: queue, limit: 100, resetRetryCount: true, from: ['deadletter'] });
    assert.deepEqual(rows.map((r) => [r.id, r.status, r.retry_count]), [[id, 'pending', 0]]);
    assert.equal(await dlqRow(id), undefined);
  });

  it('dlqPurge deletes dead-lettered jobs (and their DLQ rows) of the queue only', async () => {
    const a = (await failOnce('purge-a', { maxRetries: 0 })).id;
    const b = (await failOnce('purge-b', { maxRetries: 0 })).id;
    assert.equal(await dlqPurge(t.pool, { organizationId: org, queueName: 'purge-a', limit: 100 }), 1);
    assert.equal((await t.pool.query('SELECT 1 FROM spool.jobs WHERE id = $1', [a])).rowCount, 0);
    assert.equal(await dlqRow(a), undefined);
    assert.equal((await jobRow(t.pool, b)).status, 'deadletter', 'another queue is untouched');
    assert.equal(await dlqPurge(t.pool, { organizationId: await createOrganization(t.pool), limit: 100 }), 0);
  });
});

describe('priority', () => {
  it('changes a pending job\'s priority and reports old and new', async () => {
    const queue = 'priority-change';
    const low = await insertJob(t.pool, org, queue, { priority: 0 });
    const boosted = await insertJob(t.pool, org, queue, { priority: 0 });
    assert.deepEqual(await jobSetPriority(t.pool, org, boosted, 50), { oldPriority: 0, newPriority: 50 });
    const claimed = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 2, leaseSeconds: 30 });
    assert.deepEqual(claimed.map((j) => j.id), [boosted, low]);
  });

  it('refuses running jobs, other organizations\' jobs and malformed ids', async () => {
    const queue = 'priority-refused';
    const id = await insertJob(t.pool, org, queue);
    assert.equal(await jobSetPriority(t.pool, await createOrganization(t.pool), id, 10), null);
    assert.equal(await jobSetPriority(t.pool, org, 'nope', 10), null);
    await claimOne(t.pool, org, queue, 'w');
    assert.equal(await jobSetPriority(t.pool, org, id, 10), null);
    assert.equal((await jobRow(t.pool, id)).priority, 0);
  });
});

describe('jobCancelMany', () => {
  it('reports each outcome: pending/scheduled → cancelled, processing → cancel_requested, completed → conflict, unknown/malformed/foreign → not_found', async () => {
    const queue = 'cancel-outcomes';
    const [pending, scheduled] = await jobInsertMany(t.pool, [
      { organizationId: org, queueName: queue, payload: {} },
      { organizationId: org, queueName: queue, payload: {}, scheduledAt: new Date(Date.now() + 3_600_000) },
    ]);
    const processingId = await insertJob(t.pool, org, `${queue}-run`);
    const running = await claimOne(t.pool, org, `${queue}-run`, 'w');
    const completedId = await insertJob(t.pool, org, `${queue}-done`);
    const done = await claimOne(t.pool, org, `${queue}-done`, 'w');
    await jobCompleteMany(t.pool, org, [{ id: completedId, workerId: 'w', leaseId: done.lease_id }]);
    const foreign = await insertJob(t.pool, await createOrganization(t.pool), queue);
    const unknown = '00000000-0000-7000-8000-000000000000';

    const outcomes = await jobCancelMany(t.pool, org, [pending!.id, scheduled!.id, running.id, completedId, unknown, 'not-a-uuid', foreign]);
    assert.deepEqual(Object.fromEntries([...outcomes].map(([id, o]) => [id, o])), {
      [pending!.id]: { outcome: 'cancelled', previousStatus: 'pending' },
      [scheduled!.id]: { outcome: 'cancelled', previousStatus: 'scheduled' },
      [processingId]: { outcome: 'cancel_requested', previousStatus: 'processing' },
      [completedId]: { outcome: 'conflict', previousStatus: 'completed' },
      [unknown]: { outcome: 'not_found', previousStatus: null },
      'not-a-uuid': { outcome: 'not_found', previousStatus: null },
      [foreign]: { outcome: 'not_found', previousStatus: null },
    });
    for (const id of [pending!.id, scheduled!.id]) {
      const row = await jobRow(t.pool, id);
      assert.equal(row.status, 'cancelled');
      assert.ok(row.completed_at);
    }
    assert.equal(await claimable(queue), 0, 'a cancelled job is never claimed');
    const runningRow = await jobRow(t.pool, processingId);
    assert.equal(runningRow.status, 'processing');
    assert.ok(runningRow.cancel_requested_at);
    assert.equal((await jobRow(t.pool, completedId)).status, 'completed');
    assert.equal((await jobRow(t.pool, foreign)).status, 'pending', 'another organization\'s job is untouched');
  });
});

describe('expiry service', () => {
  it('ends pending and scheduled jobs past expires_at as cancelled with a reason, and leaves others alone', async () => {
    const queue = 'expiry';
    const soon = new Date(Date.now() + 100);
    const [expiring, expiringScheduled, lasting] = await jobInsertMany(t.pool, [
      { organizationId: org, queueName: queue, payload: {}, expiresAt: soon },
      { organizationId: org, queueName: queue, payload: {}, expiresAt: soon, scheduledAt: new Date(Date.now() + 3_600_000) },
      { organizationId: org, queueName: queue, payload: {}, expiresAt: new Date(Date.now() + 3_600_000) },
    ]);
    await sleep(200);
    assert.equal(await jobExpire(t.pool, 1000), 2);
    for (const id of [expiring!.id, expiringScheduled!.id]) {
      const row = await jobRow(t.pool, id);
      assert.equal(row.status, 'cancelled');
      assert.ok(row.completed_at);
      assert.match(row.last_error ?? '', /^Expired: expires_at \d{4}-\d\d-\d\dT[\d:.]+Z passed before the job started$/);
    }
    assert.equal((await jobRow(t.pool, lasting!.id)).status, 'pending');
    assert.equal(await jobExpire(t.pool, 1000), 0, 'nothing left to expire');
  });
});
