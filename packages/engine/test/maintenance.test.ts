import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DlqRetention, jobClaim, jobHistory, jobInsertMany, JobRetention, RevokedTokenPruner, scheduleCreate, ScheduleRunPruner, WorkerLiveness } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { loadJobsAsIs } from '../../../test-support/job-fixtures.js';
import { insertJob } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('maint');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

/** A job in `status`, finished `ageDays` ago (for finished statuses), with its create history row. */
async function job(queue: string, status: string, ageDays: number): Promise<string> {
  const [inserted] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: queue, payload: { status, ageDays } }]);
  const id = inserted!.id;
  if (status === 'processing') {
    await t.pool.query(`UPDATE spool.jobs SET status = 'processing', assigned_worker_id = 'w', lease_id = gen_random_uuid(), lease_expires_at = now() + interval '1 hour', created_at = now() - make_interval(days => $2) WHERE id = $1`, [id, ageDays]);
  } else if (status !== 'pending') {
    // Finished at a chosen time, straight from pending (no operation makes that move, nor reaches failed).
    await loadJobsAsIs(t.pool, (c) => c.query(`UPDATE spool.jobs SET status = $2, completed_at = now() - make_interval(secs => $3::float8 * 86400), created_at = now() - make_interval(secs => $3::float8 * 86400 + 60) WHERE id = $1`, [id, status, ageDays]));
    if (status === 'deadletter') await t.pool.query(`INSERT INTO spool.dead_letter_queue (organization_id, job_id, queue_name, payload, retry_count) VALUES ($1, $2, $3, '{}', 3)`, [org, id, queue]);
  } else {
    await t.pool.query(`UPDATE spool.jobs SET created_at = now() - make_interval(days => $2) WHERE id = $1`, [id, ageDays]);
  }
  await t.pool.query(`INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, to_status) VALUES ($1, $2, $3, 'test', $4)`, [org, id, queue, status]);
  return id;
}

async function remaining(ids: string[]): Promise<Set<string>> {
  const rows = await t.pool.query<{ id: string }>('SELECT id FROM spool.jobs WHERE id = ANY($1)', [ids]);
  return new Set(rows.rows.map((r) => r.id));
}

async function historyOf(ids: string[]): Promise<Set<string>> {
  const rows = await t.pool.query<{ job_id: string }>('SELECT DISTINCT job_id FROM spool.job_history WHERE job_id = ANY($1)', [ids]);
  return new Set(rows.rows.map((r) => r.job_id));
}

describe('retention', () => {
  it('removes exactly the finished jobs past their (per-queue) window with their history, and nothing else', async () => {
    await t.pool.query(`INSERT INTO spool.queue_config (organization_id, queue_name, settings) VALUES
      ($1, 'r-short', '{"retention": {"completed_days": 1}}'),
      ($1, 'r-long', '{"retention": {"completed_days": 30, "deadletter_days": 60}}'),
      ($1, 'r-bad', '{"retention": {"completed_days": "soon"}}')`, [org]);
    const expectGone = [
      await job('r-default', 'completed', 8),
      await job('r-default', 'cancelled', 8),
      await job('r-default', 'failed', 31),
      await job('r-short', 'completed', 2),
      await job('r-bad', 'completed', 8),
    ];
    const expectKept = [
      await job('r-default', 'completed', 6),
      await job('r-default', 'cancelled', 6.5),
      await job('r-default', 'failed', 10),
      await job('r-default', 'pending', 400),
      await job('r-default', 'processing', 400),
      await job('r-default', 'deadletter', 31), // DlqRetention's, not this service's
      await job('r-short', 'completed', 0.5),
      await job('r-long', 'completed', 8),
      await job('r-bad', 'completed', 6),
    ];
    // Keyed answers (migration 045) that name a deleted job go with it.
    await t.pool.query(`INSERT INTO spool.job_key_answers (organization_id, idempotency_key, job_id) VALUES ($1, 'r-gone', $2), ($1, 'r-kept', $3)`, [org, expectGone[0], expectKept[0]]);
    const retention = new JobRetention(t.pool, { batchSize: 1000 });
    await retention.runOnce();
    assert.deepEqual(await remaining(expectGone), new Set());
    assert.deepEqual(await remaining(expectKept), new Set(expectKept));
    assert.deepEqual((await t.pool.query('SELECT idempotency_key FROM spool.job_key_answers WHERE organization_id = $1', [org])).rows, [{ idempotency_key: 'r-kept' }]);
    assert.deepEqual(await historyOf(expectGone), new Set(), 'history follows its job');
    assert.deepEqual(await historyOf(expectKept), new Set(expectKept), 'history of kept and live jobs stays');
    assert.equal(retention.counters.get('jobs_deleted'), expectGone.length);
    // Each job's own row; their 'create' events are in rows of many jobs, pruned by age (below).
    assert.equal(retention.counters.get('history_deleted'), expectGone.length);
    await retention.runOnce();
    assert.deepEqual(await remaining(expectKept), new Set(expectKept), 'a second pass deletes nothing more');
  });

  it("prunes rows of routine transitions past their queue's longest window; a job whose create row went still tells its creation", async () => {
    await t.pool.query(`INSERT INTO spool.queue_config (organization_id, queue_name, settings) VALUES
      ($1, 'h-brief', '{"retention": {"completed_days": 1, "failed_days": 1, "cancelled_days": 1, "deadletter_days": 1}}'),
      ($1, 'h-kept', '{"retention": {"completed_days": 60}}')`, [org]);
    const [young, old, brief, kept] = await Promise.all(['h-young', 'h-old', 'h-brief', 'h-kept'].map((queue) => insertJob(t.pool, org, queue)));
    const age = (id: string, days: number) => t.pool.query(`UPDATE spool.job_history SET created_at = now() - make_interval(days => $2) WHERE job_id IS NULL AND $1 = ANY (job_ids)`, [id, days]);
    await age(old!, 31); // past the defaults' longest window (30 days)
    await age(brief!, 2); // past its queue's 1 day
    await age(kept!, 31); // its queue keeps completed jobs 60 days
    const retention = new JobRetention(t.pool, { batchSize: 1000 });
    await retention.runOnce();
    const left = await t.pool.query<{ job_id: string }>('SELECT job_id FROM spool.job_events WHERE job_id = ANY($1)', [[young, old, brief, kept]]);
    assert.deepEqual(new Set(left.rows.map((r) => r.job_id)), new Set([young, kept]), 'the rows past their window went, the others stay');
    const timeline = await jobHistory(t.pool, org, old!, 10);
    assert.deepEqual(timeline.map((e) => [e.id, e.event, e.to_status]), [[0, 'create', 'pending']]);
  });

  it('dead-letter retention removes old dead-lettered jobs (and their DLQ rows) only', async () => {
    const gone = await job('d-default', 'deadletter', 31);
    const keptYoung = await job('d-default', 'deadletter', 29);
    const keptLong = await job('r-long', 'deadletter', 45);
    const keptCompleted = await job('d-default', 'completed', 3);
    await new DlqRetention(t.pool).runOnce();
    assert.deepEqual(await remaining([gone, keptYoung, keptLong, keptCompleted]), new Set([keptYoung, keptLong, keptCompleted]));
    const dlq = await t.pool.query('SELECT job_id FROM spool.dead_letter_queue WHERE job_id = ANY($1)', [[gone, keptYoung]]);
    assert.deepEqual(dlq.rows.map((r) => r.job_id), [keptYoung]);
    assert.deepEqual(await historyOf([gone]), new Set());
  });

  it('deletes failed jobs in bounded batches and asks to run again at once while batches are full', async () => {
    const ids = [await job('b-batch', 'failed', 31), await job('b-batch', 'failed', 31), await job('b-batch', 'failed', 31)];
    const retention = new JobRetention(t.pool, { batchSize: 2, idleMs: 60_000 });
    assert.equal(await retention.runOnce(), 0);
    assert.equal((await remaining(ids)).size, 1);
    assert.equal(await retention.runOnce(), 60_000);
    assert.equal((await remaining(ids)).size, 0);
  });
});

describe('worker liveness', () => {
  it('marks workers silent for 2 minutes offline and gives their processing jobs back; live workers are untouched', async () => {
    const worker = async (silentSeconds: number) => (await t.pool.query<{ id: string }>(
      `INSERT INTO spool.workers (organization_id, queue_name, hostname, last_heartbeat) VALUES ($1, 'live-q', 'host', now() - make_interval(secs => $2)) RETURNING id`, [org, silentSeconds])).rows[0]!.id;
    const silent = await worker(150);
    const alive = await worker(30);
    await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'live-q', payload: 1 }, { organizationId: org, queueName: 'live-q', payload: 2 }]);
    const [silentJob] = await jobClaim(t.pool, { organizationId: org, queueName: 'live-q', workerId: silent, limit: 1, leaseSeconds: 3600 });
    const [aliveJob] = await jobClaim(t.pool, { organizationId: org, queueName: 'live-q', workerId: alive, limit: 1, leaseSeconds: 3600 });
    const liveness = new WorkerLiveness(t.pool);
    await liveness.runOnce();
    const workers = await t.pool.query<{ id: string; status: string }>('SELECT id, status FROM spool.workers WHERE id = ANY($1)', [[silent, alive]]);
    assert.deepEqual(Object.fromEntries(workers.rows.map((w) => [w.id, w.status])), { [silent]: 'offline', [alive]: 'healthy' });
    const jobs = await t.pool.query<{ id: string; status: string; retry_count: number; assigned_worker_id: string | null }>('SELECT id, status, retry_count, assigned_worker_id FROM spool.jobs WHERE id = ANY($1)', [[silentJob!.id, aliveJob!.id]]);
    const byId = Object.fromEntries(jobs.rows.map((j) => [j.id, j]));
    assert.deepEqual(byId[silentJob!.id], { id: silentJob!.id, status: 'pending', retry_count: 0, assigned_worker_id: null });
    assert.equal(byId[aliveJob!.id]!.status, 'processing');
    const history = await t.pool.query(`SELECT event FROM spool.job_history WHERE job_id = $1 ORDER BY id DESC LIMIT 1`, [silentJob!.id]);
    assert.equal(history.rows[0].event, 'release');
    assert.equal(liveness.counters.get('workers_offline'), 1);
    assert.equal(liveness.counters.get('jobs_released'), 1);
  });
});

describe('pruning', () => {
  it('forgets revoked tokens only once they expired more than the grace ago', async () => {
    const rows = [['-10 minutes', randomUUID()], ['-1 minute', randomUUID()], ['1 hour', randomUUID()]] as const;
    for (const [offset, jti] of rows) await t.pool.query(`INSERT INTO spool.revoked_tokens (jti, organization_id, expires_at) VALUES ($1, $2, now() + $3::interval)`, [jti, org, offset]);
    const pruner = new RevokedTokenPruner(t.pool, { graceMs: 5 * 60_000 });
    await pruner.runOnce();
    const left = await t.pool.query<{ jti: string }>('SELECT jti FROM spool.revoked_tokens WHERE jti = ANY($1)', [rows.map((r) => r[1])]);
    assert.deepEqual(new Set(left.rows.map((r) => r.jti)), new Set([rows[1][1], rows[2][1]]));
    assert.equal(pruner.counters.get('pruned'), 1);
  });

  it('deletes schedule runs older than the window', async () => {
    const schedule = await scheduleCreate(t.pool, { organizationId: org, name: 'p', cronExpression: '0 0 0 * * *', queueName: 'p', payloadTemplate: {} });
    await t.pool.query(`INSERT INTO spool.schedule_runs (organization_id, schedule_id, fire_time, status, started_at) VALUES
      ($1, $2, now() - interval '8 days', 'completed', now() - interval '8 days'),
      ($1, $2, now() - interval '1 day', 'completed', now() - interval '1 day')`, [org, schedule.id]);
    await new ScheduleRunPruner(t.pool, { days: 7 }).runOnce();
    const left = await t.pool.query(`SELECT count(*)::int AS n FROM spool.schedule_runs WHERE schedule_id = $1`, [schedule.id]);
    assert.equal(left.rows[0].n, 1);
  });
});
