import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  LeaseReaper, jobCancelMany, jobClaim, jobCompleteMany, jobFailMany, jobHeartbeat, jobLogAppend, jobProgressSet, jobRescueExpired, jobSnooze,
  queueConfigUpsert,
  scheduleCreate, scheduleTrigger, scheduleUpdate, workflowCreate, type JobRow,
} from '@spool/engine';
import { LIMITS } from '@spool/protocol';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimOne, expireLease, historyOf, insertJob, jobRow } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('timeout');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value, for at most 15 s (generous for a loaded machine). */
async function waitFor<T>(what: string, check: () => Promise<T | null | undefined>): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await check();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * Moves a processing job's deadline (and so its lease, which never outlives
 * it) into the past, as if its timeout had run out, without waiting for it.
 */
async function passDeadline(id: string): Promise<void> {
  const result = await t.pool.query(
    `UPDATE spool.jobs SET deadline_at = now() - interval '1 second', lease_expires_at = now() - interval '1 second'
     WHERE id = $1 AND status = 'processing' AND deadline_at IS NOT NULL`, [id]);
  assert.equal(result.rowCount, 1, 'deadline moved into the past');
}

const beat = (job: JobRow, leaseId: string | null = job.lease_id) =>
  jobHeartbeat(t.pool, { organizationId: org, id: job.id, workerId: job.assigned_worker_id!, leaseId, leaseSeconds: 30 });

describe('which timeouts the server enforces', () => {
  it('a job\'s own timeout_seconds, even the default\'s value; not the built-in default', async () => {
    const own = await insertJob(t.pool, org, 'enf-own', { timeoutSeconds: 60 });
    const own300 = await insertJob(t.pool, org, 'enf-own', { timeoutSeconds: LIMITS.timeoutSecondsDefault });
    const builtIn = await insertJob(t.pool, org, 'enf-own');
    assert.equal((await jobRow(t.pool, own)).timeout_enforced, true);
    assert.equal((await jobRow(t.pool, own300)).timeout_enforced, true);
    const plain = await jobRow(t.pool, builtIn);
    assert.equal(plain.timeout_seconds, LIMITS.timeoutSecondsDefault);
    assert.equal(plain.timeout_enforced, false);
  });

  it('a queue\'s default_timeout only once the operator set it; null goes back to the built-in default', async () => {
    // A config row made for something else holds default_timeout 300 that nobody chose.
    await queueConfigUpsert(t.pool, org, 'enf-queue', { maxRetries: 5 });
    const before = await jobRow(t.pool, await insertJob(t.pool, org, 'enf-queue'));
    assert.equal(before.timeout_enforced, false);
    assert.equal(before.max_retries, 5);

    const set = await queueConfigUpsert(t.pool, org, 'enf-queue', { defaultTimeout: 45 });
    assert.equal(set.default_timeout_set, true);
    const kept = await queueConfigUpsert(t.pool, org, 'enf-queue', { maxRetries: 2 });
    assert.equal(kept.default_timeout_set, true, 'a later update without default_timeout keeps it chosen');
    const after = await jobRow(t.pool, await insertJob(t.pool, org, 'enf-queue'));
    assert.equal(after.timeout_seconds, 45);
    assert.equal(after.timeout_enforced, true);

    const reset = await queueConfigUpsert(t.pool, org, 'enf-queue', { defaultTimeout: null });
    assert.equal(reset.default_timeout, LIMITS.timeoutSecondsDefault);
    assert.equal(reset.default_timeout_set, false);
    assert.equal((await jobRow(t.pool, await insertJob(t.pool, org, 'enf-queue'))).timeout_enforced, false);

    const created = await queueConfigUpsert(t.pool, org, 'enf-queue-new', { defaultTimeout: LIMITS.timeoutSecondsDefault });
    assert.equal(created.default_timeout_set, true, 'set on the insert that creates the row, even to 300');
  });

  it('a schedule\'s jobs only when the schedule was given a timeout; otherwise the queue decides', async () => {
    await queueConfigUpsert(t.pool, org, 'enf-cron-q', { defaultTimeout: 90 });
    const unset = await scheduleCreate(t.pool, { organizationId: org, name: 'u', cronExpression: '0 0 0 * * *', queueName: 'enf-cron', payloadTemplate: {} });
    assert.equal(unset.timeout_set, false);
    const fired = await jobRow(t.pool, (await scheduleTrigger(t.pool, org, unset.id))!.jobId);
    assert.equal(fired.timeout_enforced, false);
    assert.equal(fired.timeout_seconds, LIMITS.timeoutSecondsDefault);

    const onConfigured = await scheduleCreate(t.pool, { organizationId: org, name: 'q', cronExpression: '0 0 0 * * *', queueName: 'enf-cron-q', payloadTemplate: {} });
    const fromQueue = await jobRow(t.pool, (await scheduleTrigger(t.pool, org, onConfigured.id))!.jobId);
    assert.equal(fromQueue.timeout_seconds, 90, 'the queue\'s chosen default, as for any job enqueued without a timeout');
    assert.equal(fromQueue.timeout_enforced, true);

    const given = await scheduleCreate(t.pool, { organizationId: org, name: 'g', cronExpression: '0 0 0 * * *', queueName: 'enf-cron', payloadTemplate: {}, timeoutSeconds: 20 });
    assert.equal(given.timeout_set, true);
    const own = await jobRow(t.pool, (await scheduleTrigger(t.pool, org, given.id))!.jobId);
    assert.equal(own.timeout_seconds, 20);
    assert.equal(own.timeout_enforced, true);

    const renamed = await scheduleUpdate(t.pool, org, given.id, { name: 'g2' });
    assert.equal(renamed!.timeout_set, true, 'an update that does not touch the timeout keeps it given');
    const later = await scheduleUpdate(t.pool, org, unset.id, { timeoutSeconds: 30 });
    assert.equal(later!.timeout_set, true);
    assert.equal((await jobRow(t.pool, (await scheduleTrigger(t.pool, org, unset.id))!.jobId)).timeout_enforced, true);
  });

  it('a workflow job\'s own timeout_seconds or its queue\'s chosen default', async () => {
    await queueConfigUpsert(t.pool, org, 'enf-wf-q', { defaultTimeout: 70 });
    const created = await workflowCreate(t.pool, {
      organizationId: org,
      name: 'wf',
      jobs: [
        { key: 'own', queueName: 'enf-wf', payload: {}, timeoutSeconds: 10 },
        { key: 'none', queueName: 'enf-wf', payload: {} },
        { key: 'queue', queueName: 'enf-wf-q', payload: {} },
      ],
    });
    const byKey = new Map(created.jobIds.map((j) => [j.key, j.jobId]));
    assert.equal((await jobRow(t.pool, byKey.get('own')!)).timeout_enforced, true);
    assert.equal((await jobRow(t.pool, byKey.get('none')!)).timeout_enforced, false);
    const queued = await jobRow(t.pool, byKey.get('queue')!);
    assert.equal(queued.timeout_seconds, 70);
    assert.equal(queued.timeout_enforced, true);
  });
});

describe('an enforced timeout', () => {
  it('fails an attempt whose worker keeps heartbeating once its deadline passes, and retries it after a backoff', async () => {
    const queue = 'to-live';
    const id = await insertJob(t.pool, org, queue, { timeoutSeconds: LIMITS.timeoutSecondsMin, maxRetries: 2 });
    const job = await claimOne(t.pool, org, queue, 'busy-worker', 30);
    assert.ok(job.deadline_at, 'the claim sets the deadline');
    assert.equal(job.deadline_at.getTime() - job.started_at!.getTime(), LIMITS.timeoutSecondsMin * 1000, 'claim time + timeout_seconds');
    assert.ok(job.lease_expires_at! <= job.deadline_at, 'the claim\'s lease stops at the deadline although 30 s were asked');

    const reaper = new LeaseReaper(t.pool);
    // The worker heartbeats as a live one would; the reaper runs as the leader's would.
    let accepted = 0;
    const refusal = await waitFor('the heartbeat to be refused', async () => {
      const outcome = await beat(job);
      await reaper.runOnce();
      if (outcome.ok) {
        accepted += 1;
        assert.ok(outcome.leaseExpiresAt <= job.deadline_at!, 'a heartbeat never extends the lease past the deadline');
        assert.equal(outcome.deadlineAt?.getTime(), job.deadline_at!.getTime());
        return null;
      }
      return outcome;
    });
    assert.ok(accepted >= 1, 'heartbeats before the deadline were accepted');
    assert.deepEqual(refusal, { ok: false, reason: 'timed_out' });

    const row = await waitFor('the reaper to fail the attempt', async () => {
      await reaper.runOnce();
      const current = await jobRow(t.pool, id);
      return current.status === 'processing' ? null : current;
    });
    assert.equal(row.status, 'pending');
    assert.equal(row.retry_count, 1);
    assert.equal(row.last_error, `Timed out after ${LIMITS.timeoutSecondsMin} s (timeout_seconds): the server ended the attempt`);
    assert.equal(row.in_backoff, true, 'retried after the queue\'s backoff, as a failure');
    assert.ok(row.scheduled_at && row.scheduled_at > row.updated_at);
    assert.equal(row.lease_id, null);

    const timeout = (await historyOf(t.pool, id)).filter((h) => h.event === 'timeout');
    assert.equal(timeout.length, 1);
    assert.deepEqual(
      { from: timeout[0]!.from_status, to: timeout[0]!.to_status, worker: timeout[0]!.worker_id, lease: timeout[0]!.lease_id, message: timeout[0]!.message },
      { from: 'processing', to: 'pending', worker: 'busy-worker', lease: job.lease_id, message: row.last_error },
    );

    // The worker's further heartbeats and its completion are refused, and say why.
    assert.deepEqual(await beat(job), { ok: false, reason: 'timed_out' });
    const [done] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'busy-worker', leaseId: job.lease_id, result: { late: true } }]);
    assert.deepEqual(done, { id, ok: false, reason: 'timed_out' });
    // Without a lease id, a job the reaper ended cannot be told from any other lost job.
    const [anonymous] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'busy-worker', result: null }]);
    assert.deepEqual(anonymous, { id, ok: false, reason: 'not_owned' });
    assert.equal((await jobRow(t.pool, id)).status, 'pending');
  });

  it('refuses a heartbeat, snooze, progress, log, completion or failure after the deadline even before the reaper ran', async () => {
    const queue = 'to-late';
    const id = await insertJob(t.pool, org, queue, { timeoutSeconds: 60, maxRetries: 0 });
    const job = await claimOne(t.pool, org, queue, 'slow-worker');
    await passDeadline(id);
    assert.deepEqual(await beat(job), { ok: false, reason: 'timed_out' });
    assert.deepEqual(await beat(job, null), { ok: false, reason: 'timed_out' });
    const [complete] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'slow-worker', leaseId: job.lease_id, result: 1 }]);
    assert.deepEqual(complete, { id, ok: false, reason: 'timed_out' });
    const [completeNoLease] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'slow-worker', result: 1 }]);
    assert.deepEqual(completeNoLease, { id, ok: false, reason: 'timed_out' });
    const [fail] = await jobFailMany(t.pool, org, [{ id, workerId: 'slow-worker', leaseId: job.lease_id, error: 'late' }]);
    assert.deepEqual(fail, { id, ok: false, reason: 'timed_out' });
    // The other calls of the worker holding the job share the fence (spool.job_fence).
    const fenced = { organizationId: org, id, workerId: 'slow-worker', leaseId: job.lease_id };
    assert.deepEqual(await jobSnooze(t.pool, { ...fenced, delaySecs: 5 }), { ok: false, reason: 'timed_out' });
    assert.deepEqual(await jobProgressSet(t.pool, { ...fenced, percent: 50 }), { ok: false, reason: 'timed_out' });
    assert.deepEqual(await jobLogAppend(t.pool, { ...fenced, leaseId: null, lines: ['late'] }), { ok: false, reason: 'timed_out' });
    assert.deepEqual(await jobProgressSet(t.pool, { ...fenced, workerId: 'other-worker' }), { ok: false, reason: 'not_owned' });
    // Another worker's or another lease's call is refused as before.
    const [stranger] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'other-worker', result: 1 }]);
    assert.deepEqual(stranger, { id, ok: false, reason: 'not_owned' });
    assert.equal((await jobRow(t.pool, id)).status, 'processing', 'nothing changed it');

    assert.deepEqual(await jobRescueExpired(t.pool, 1000), { rescued: 1, deadlettered: 1 });
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'deadletter', 'no retries left');
    assert.equal(row.retry_count, 0);
    assert.match(row.last_error ?? '', /^Timed out after 60 s/);
    const dlq = await t.pool.query('SELECT error FROM spool.dead_letter_queue WHERE job_id = $1', [id]);
    assert.match(dlq.rows[0]?.error ?? '', /^Timed out after 60 s/);
    assert.deepEqual((await historyOf(t.pool, id)).filter((h) => h.event === 'timeout').map((h) => h.to_status), ['deadletter']);
  });

  it('ends a timed-out attempt cancelled after a cancel request', async () => {
    const queue = 'to-cancel';
    const id = await insertJob(t.pool, org, queue, { timeoutSeconds: 60 });
    await claimOne(t.pool, org, queue, 'w');
    await jobCancelMany(t.pool, org, [id]);
    await passDeadline(id);
    await jobRescueExpired(t.pool, 1000);
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'cancelled');
    assert.deepEqual((await historyOf(t.pool, id)).filter((h) => h.event === 'timeout').map((h) => h.to_status), ['cancelled']);
  });

  it('still calls a lease that ran out before the deadline an expired lease', async () => {
    const queue = 'to-silent';
    const id = await insertJob(t.pool, org, queue, { timeoutSeconds: 600 });
    await claimOne(t.pool, org, queue, 'gone-worker', 30);
    await expireLease(t.pool, id);
    await jobRescueExpired(t.pool, 1000);
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'pending');
    assert.equal(row.last_error, 'Lease expired (worker timeout)');
    assert.equal(row.in_backoff, false, 'claimable again at once, as before');
    const events = (await historyOf(t.pool, id)).map((h) => h.event);
    assert.ok(events.includes('lease_expired') && !events.includes('timeout'), events.join(', '));
  });

  it('gives each claim its own deadline: a retried job completes within its new one', async () => {
    const queue = 'to-again';
    const id = await insertJob(t.pool, org, queue, { timeoutSeconds: 60 });
    const first = await claimOne(t.pool, org, queue, 'w');
    await passDeadline(id);
    await jobRescueExpired(t.pool, 1000);
    await t.pool.query('UPDATE spool.jobs SET in_backoff = false, scheduled_at = now() WHERE id = $1', [id]);
    const second = await claimOne(t.pool, org, queue, 'w');
    assert.ok(second.deadline_at! > first.deadline_at!);
    assert.deepEqual(await beat(first), { ok: false, reason: 'timed_out' }, 'the old attempt stays refused');
    const [done] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'w', leaseId: second.lease_id, result: 'ok' }]);
    assert.equal(done?.ok, true);
  });
});

describe('the built-in default timeout', () => {
  it('is not enforced: the claim sets no deadline, and a heartbeating worker keeps its job', async () => {
    const queue = 'to-builtin';
    const id = await insertJob(t.pool, org, queue);
    const job = await claimOne(t.pool, org, queue, 'long-worker', 30);
    assert.equal(job.timeout_enforced, false);
    assert.equal(job.deadline_at, null);
    // As if it had run far past its 300 s: still its job, whatever the clock says.
    await t.pool.query(`UPDATE spool.jobs SET started_at = now() - interval '1 hour' WHERE id = $1`, [id]);
    const outcome = await beat(job);
    assert.ok(outcome.ok);
    assert.equal(outcome.deadlineAt, null);
    assert.ok(outcome.leaseExpiresAt.getTime() - Date.now() > 20_000, 'the lease is extended as asked');
    assert.deepEqual(await jobRescueExpired(t.pool, 1000), { rescued: 0, deadlettered: 0 });
    const [done] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'long-worker', leaseId: job.lease_id, result: 'ok' }]);
    assert.equal(done?.ok, true);
  });

  it('costs a claim nothing but a NULL deadline (the claimed rows are otherwise as before)', async () => {
    const queue = 'to-builtin-batch';
    for (let i = 0; i < 3; i++) await insertJob(t.pool, org, queue);
    const jobs = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 10, leaseSeconds: 30 });
    assert.equal(jobs.length, 3);
    for (const job of jobs) {
      assert.equal(job.deadline_at, null);
      assert.ok(job.lease_expires_at!.getTime() - job.started_at!.getTime() === 30_000, 'the lease asked for');
    }
  });
});
