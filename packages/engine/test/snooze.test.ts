import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  jobCancelMany, jobClaim, jobCompleteMany, jobExplain, jobPromoteScheduled, jobSnooze, workflowCreate, type JobRow,
} from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimOne, historyOf, insertJob, jobRow } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('snooze');
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

const snooze = (job: JobRow, delaySecs: number, leaseId: string | null = job.lease_id, workerId = job.assigned_worker_id!) =>
  jobSnooze(t.pool, { organizationId: org, id: job.id, workerId, leaseId, delaySecs });

const claim = (queue: string, workerId = 'w2') => jobClaim(t.pool, { organizationId: org, queueName: queue, workerId, limit: 10, leaseSeconds: 30 });

/** Seconds from the snooze statement (updated_at = its now()) to the wake-up time. */
async function snoozedForSecs(id: string): Promise<number> {
  const result = await t.pool.query<{ secs: number }>('SELECT extract(epoch FROM scheduled_at - updated_at)::float8 AS secs FROM spool.jobs WHERE id = $1', [id]);
  return result.rows[0]!.secs;
}

describe('snooze', () => {
  it('puts the job back to wait without using an attempt: pending in backoff, lease and worker cleared, a snooze history row', async () => {
    const queue = 'snooze-basic';
    const id = await insertJob(t.pool, org, queue, { maxRetries: 2 });
    const job = await claimOne(t.pool, org, queue, 'w1');
    const outcome = await snooze(job, 600);
    assert.ok(outcome.ok, 'snooze accepted');
    assert.equal(outcome.status, 'pending');
    assert.equal(outcome.retryCount, 0);

    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'pending');
    assert.equal(row.retry_count, 0, 'no attempt used');
    assert.equal(row.in_backoff, true);
    assert.equal(row.lease_id, null);
    assert.equal(row.lease_expires_at, null);
    assert.equal(row.assigned_worker_id, null);
    assert.equal(row.completed_at, null);
    assert.equal(row.last_error, null, 'a snooze is not a failure');
    assert.equal(await snoozedForSecs(id), 600);
    assert.equal(outcome.scheduledAt?.getTime(), row.scheduled_at!.getTime());

    const events = await historyOf(t.pool, id);
    const last = events.at(-1)!;
    assert.deepEqual(
      { event: last.event, from: last.from_status, to: last.to_status, worker: last.worker_id, lease: last.lease_id },
      { event: 'snooze', from: 'processing', to: 'pending', worker: 'w1', lease: job.lease_id },
    );
    assert.equal(last.message, row.scheduled_at!.toISOString(), 'the message is the wake-up time');

    const explained = await jobExplain(t.pool, org, id);
    const reason = explained!.reasons.find((r) => r.code === 'snoozed');
    assert.ok(reason, 'explain says it waits');
    assert.match(reason.message, /snoozed/);
  });

  it('is not claimable before its time, and is after (the promoter ends the wait); the next attempt is still the first', async () => {
    const queue = 'snooze-wait';
    const id = await insertJob(t.pool, org, queue);
    const job = await claimOne(t.pool, org, queue, 'w1');
    assert.ok((await snooze(job, 1)).ok);
    assert.equal((await claim(queue)).length, 0, 'not claimable during the snooze');
    assert.equal(await jobPromoteScheduled(t.pool, 1000) >= 0, true);
    // Until its time the promoter leaves it waiting (the delay is 1 s: probe only while it provably has not passed).
    const early = await t.pool.query<{ due: boolean }>('SELECT scheduled_at <= now() AS due FROM spool.jobs WHERE id = $1', [id]);
    if (!early.rows[0]!.due) assert.equal((await jobRow(t.pool, id)).in_backoff, true, 'still waiting before its time');

    const again = await waitFor('the snoozed job to be claimable', async () => {
      await jobPromoteScheduled(t.pool, 1000);
      const jobs = await claim(queue);
      return jobs.length > 0 ? jobs : null;
    });
    assert.equal(again.length, 1);
    assert.equal(again[0]!.id, id);
    assert.equal(again[0]!.retry_count, 0);
    const [done] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'w2', leaseId: again[0]!.lease_id, result: { ok: true } }]);
    assert.ok(done?.ok);
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'completed');
    assert.equal(row.retry_count, 0);
  });

  it('a long snooze stays out of claims until scheduled_at is reached', async () => {
    const queue = 'snooze-long';
    const id = await insertJob(t.pool, org, queue);
    assert.ok((await snooze(await claimOne(t.pool, org, queue, 'w1'), 3600)).ok);
    await jobPromoteScheduled(t.pool, 1000);
    assert.equal((await claim(queue)).length, 0, 'not claimable an hour early, even after the promoter ran');
    assert.equal((await jobRow(t.pool, id)).in_backoff, true);
    await t.pool.query(`UPDATE spool.jobs SET scheduled_at = now() - interval '1 second' WHERE id = $1`, [id]);
    assert.ok((await jobPromoteScheduled(t.pool, 1000)) >= 1);
    const jobs = await claim(queue);
    assert.deepEqual(jobs.map((j) => [j.id, j.retry_count]), [[id, 0]]);
  });

  it('keeps a retry count the job already had', async () => {
    const queue = 'snooze-after-retry';
    const id = await insertJob(t.pool, org, queue, { maxRetries: 3 });
    await t.pool.query('UPDATE spool.jobs SET retry_count = 2 WHERE id = $1', [id]);
    const outcome = await snooze(await claimOne(t.pool, org, queue, 'w1'), 5);
    assert.ok(outcome.ok);
    assert.equal(outcome.retryCount, 2);
    assert.equal((await jobRow(t.pool, id)).retry_count, 2);
  });

  it('is fenced like complete and fail', async () => {
    const queue = 'snooze-fence';
    const id = await insertJob(t.pool, org, queue);
    const job = await claimOne(t.pool, org, queue, 'w1');

    assert.deepEqual(await snooze(job, 5, job.lease_id, 'someone-else'), { ok: false, reason: 'not_owned' });
    assert.deepEqual(await snooze(job, 5, '00000000-0000-4000-8000-000000000000'), { ok: false, reason: 'lease_mismatch' });
    assert.deepEqual(await snooze(job, 5, 'not-a-uuid'), { ok: false, reason: 'lease_mismatch' });
    assert.deepEqual(await jobSnooze(t.pool, { organizationId: org, id: '00000000-0000-4000-8000-000000000001', workerId: 'w1', delaySecs: 5 }), { ok: false, reason: 'not_found' });
    assert.deepEqual(await jobSnooze(t.pool, { organizationId: org, id: 'nope', workerId: 'w1', delaySecs: 5 }), { ok: false, reason: 'not_found' });
    const otherOrg = await createOrganization(t.pool);
    assert.deepEqual(await jobSnooze(t.pool, { organizationId: otherOrg, id, workerId: 'w1', leaseId: job.lease_id, delaySecs: 5 }), { ok: false, reason: 'not_found' });
    const untouched = await jobRow(t.pool, id);
    assert.equal(untouched.status, 'processing');
    assert.equal(untouched.lease_id, job.lease_id);

    // Once snoozed (and claimed again by another worker) the first lease is stale.
    assert.ok((await snooze(job, 1, null)).ok, 'without a lease_id the owner may snooze');
    assert.deepEqual(await snooze(job, 5, null), { ok: false, reason: 'not_owned' }, 'a pending job is nobody\'s');
    assert.deepEqual(await snooze(job, 5), { ok: false, reason: 'lease_mismatch' }, 'the lease the snooze ended');
    await t.pool.query(`UPDATE spool.jobs SET scheduled_at = now() - interval '1 second' WHERE id = $1`, [id]);
    await jobPromoteScheduled(t.pool, 1000);
    const [next] = await claim(queue, 'w1');
    assert.equal(next?.id, id);
    assert.deepEqual(await snooze(job, 5), { ok: false, reason: 'lease_mismatch' }, 'the first claim\'s lease, presented by the same worker');
    assert.equal((await historyOf(t.pool, id)).filter((e) => e.event === 'snooze').length, 1, 'refusals write nothing');
    await assert.rejects(snooze(next!, 0), RangeError);
    await assert.rejects(snooze(next!, 86_401), RangeError);
    await assert.rejects(snooze(next!, 1.5), RangeError);
  });

  it('is refused after an enforced timeout\'s deadline, like the completion', async () => {
    const queue = 'snooze-deadline';
    const id = await insertJob(t.pool, org, queue, { timeoutSeconds: 60 });
    const job = await claimOne(t.pool, org, queue, 'w1');
    assert.ok(job.deadline_at, 'an enforced timeout has a deadline');
    await t.pool.query(`UPDATE spool.jobs SET deadline_at = now() - interval '1 second', lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    assert.deepEqual(await snooze(job, 5), { ok: false, reason: 'timed_out' });
    assert.deepEqual(await snooze(job, 5, null), { ok: false, reason: 'timed_out' });
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'processing', 'left for the reaper to fail as timed out');
    assert.equal(row.retry_count, 0);
  });

  it('ends a job cancelled when its cancellation was requested, counting it in its workflow', async () => {
    const created = await workflowCreate(t.pool, { organizationId: org, name: 'snooze-wf', jobs: [{ key: 'a', queueName: 'snooze-cancel', payload: {} }] });
    const id = created.jobIds[0]!.jobId;
    const job = await claimOne(t.pool, org, 'snooze-cancel', 'w1');
    await jobCancelMany(t.pool, org, [id]);
    const outcome = await snooze(job, 30);
    assert.deepEqual(outcome, { ok: true, status: 'cancelled', retryCount: 0, scheduledAt: null });
    const row = await jobRow(t.pool, id);
    assert.equal(row.status, 'cancelled');
    assert.equal(row.in_backoff, false);
    assert.ok(row.completed_at);
    assert.equal(row.lease_id, null);
    const last = (await historyOf(t.pool, id)).at(-1)!;
    assert.deepEqual([last.event, last.from_status, last.to_status, last.message], ['snooze', 'processing', 'cancelled', null]);
    const workflow = await t.pool.query<{ cancelled_jobs: number }>('SELECT cancelled_jobs FROM spool.workflows WHERE id = $1', [created.workflowId]);
    assert.equal(workflow.rows[0]!.cancelled_jobs, 1);
  });

  it('is neither a failure nor a completion in the queue figures', async () => {
    const queue = 'snooze-stats';
    const id = await insertJob(t.pool, org, queue);
    assert.ok((await snooze(await claimOne(t.pool, org, queue, 'w1'), 30)).ok);
    const result = await t.pool.query<{ event: string; failed: string; retried: string; completed: string; deadlettered: string }>(
      `SELECT event, failed, retried, completed, deadlettered FROM spool.queue_stats_pending WHERE organization_id = $1 AND queue_name = $2 AND event = 'snooze'`,
      [org, queue],
    );
    assert.equal(result.rows.length, 1, `the snooze row of ${id} is unread by the rollup`);
    const counted = result.rows[0]!;
    assert.deepEqual([Number(counted.failed), Number(counted.retried), Number(counted.completed), Number(counted.deadlettered)], [0, 0, 0, 0]);
  });
});
