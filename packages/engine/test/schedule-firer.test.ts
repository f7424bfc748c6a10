import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPool, cronNext, cronPrevious, ScheduleFirer, scheduleCreate, scheduleFireDue, scheduleUpdate, transaction, type Db } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('firer');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

async function newSchedule(queue: string, cron: string, extra: Record<string, unknown> = {}) {
  return scheduleCreate(t.pool, { organizationId: org, name: queue, cronExpression: cron, queueName: queue, payloadTemplate: { queue, nested: { Keep: 'case' } }, tags: { source: 'cron' }, ...extra });
}

async function setNextRun(id: string, at: Date): Promise<void> {
  await t.pool.query('UPDATE spool.schedules SET next_run_at = $2 WHERE id = $1', [id, at]);
}

async function runsOf(id: string) {
  return (await t.pool.query<{ fire_time: Date; job_id: string | null; status: string; error_message: string | null }>(
    'SELECT fire_time, job_id, status, error_message FROM spool.schedule_runs WHERE schedule_id = $1 AND NOT manual ORDER BY fire_time', [id])).rows;
}

async function jobsIn(queue: string) {
  return (await t.pool.query<{ id: string; status: string; payload: unknown; tags: unknown; priority: number }>('SELECT id, status, payload, tags, priority FROM spool.jobs WHERE queue_name = $1 ORDER BY created_at', [queue])).rows;
}

describe('schedule firing', () => {
  it('creates one pending job per due tick from the template, links each run to its job and advances next_run_at', async () => {
    const schedule = await newSchedule('fire-basic', '* * * * * *', { priority: 7 });
    const now = new Date();
    const from = new Date(Math.floor(now.getTime() / 1000) * 1000 - 5000);
    await setNextRun(schedule.id, from);
    const firer = new ScheduleFirer(t.pool);
    await firer.runOnce();
    const runs = await runsOf(schedule.id);
    assert.ok(runs.length >= 5, `fired ${runs.length} ticks`);
    runs.forEach((run, i) => assert.equal(run.fire_time.getTime(), from.getTime() + i * 1000));
    assert.ok(runs[runs.length - 1]!.fire_time.getTime() <= Date.now(), 'no tick fired before its time');
    const jobs = await jobsIn('fire-basic');
    assert.equal(jobs.length, runs.length);
    assert.deepEqual(new Set(runs.map((r) => r.job_id)), new Set(jobs.map((j) => j.id)));
    assert.ok(runs.every((r) => r.status === 'completed'));
    assert.ok(jobs.every((j) => j.status === 'pending' && j.priority === 7));
    assert.deepEqual(jobs[0]!.payload, { queue: 'fire-basic', nested: { Keep: 'case' } });
    assert.deepEqual(jobs[0]!.tags, { source: 'cron' });
    const after = (await t.pool.query('SELECT next_run_at, run_count, last_run_at FROM spool.schedules WHERE id = $1', [schedule.id])).rows[0];
    assert.ok(after.next_run_at.getTime() > runs[runs.length - 1]!.fire_time.getTime());
    assert.equal(after.run_count, runs.length);
    assert.ok(after.last_run_at);
    assert.equal(firer.counters.get('fired'), runs.length);
    await t.pool.query('UPDATE spool.schedules SET is_active = false WHERE id = $1', [schedule.id]);
  });

  it('fires each tick once when eight firers on separate connections race for it', async () => {
    const schedule = await newSchedule('fire-race', '* * * * * *');
    const from = new Date(Math.floor(Date.now() / 1000) * 1000 - 10_000);
    await setNextRun(schedule.id, from);
    const pools: Db[] = Array.from({ length: 8 }, () => createPool({ connectionString: t.url, max: 2 }));
    try {
      await Promise.all(pools.map((pool) => new ScheduleFirer(pool).runOnce()));
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
    const runs = await runsOf(schedule.id);
    assert.ok(runs.length >= 10, `fired ${runs.length} ticks`);
    assert.equal(new Set(runs.map((r) => r.fire_time.getTime())).size, runs.length);
    assert.equal((await jobsIn('fire-race')).length, runs.length);
    await t.pool.query('UPDATE spool.schedules SET is_active = false WHERE id = $1', [schedule.id]);
  });

  it('refuses a tick a second time even when next_run_at is wound back: the unique run row decides, not timing', async () => {
    const schedule = await newSchedule('fire-unique', '0 0 * * * *');
    const tick = cronPrevious('0 0 * * * *', 'UTC', new Date(), 1)[0]!;
    await setNextRun(schedule.id, tick);
    const options = { limit: 10, onlyId: schedule.id, misfireThresholdMs: 3_600_000, missedCap: 10 };
    const first = await transaction(t.pool, (client) => scheduleFireDue(client, options));
    assert.equal(first.fired, 1);
    await setNextRun(schedule.id, tick);
    const second = await transaction(t.pool, (client) => scheduleFireDue(client, options));
    assert.equal(second.fired, 0);
    assert.equal(second.duplicates, 1);
    assert.equal((await jobsIn('fire-unique')).length, 1);
    assert.equal((await t.pool.query('SELECT next_run_at FROM spool.schedules WHERE id = $1', [schedule.id])).rows[0].next_run_at.getTime(), cronNext('0 0 * * * *', 'UTC', new Date())!.getTime());
  });

  it('after an outage, applies each missed-fire policy', async () => {
    // An hourly schedule at a minute half an hour away from now, so that no tick is near the threshold.
    const minute = (new Date().getUTCMinutes() + 30) % 60;
    const cron = `0 ${minute} * * * *`;
    const missed = cronPrevious(cron, 'UTC', new Date(), 5).reverse(); // the 5 ticks of the last 5 hours
    const firer = new ScheduleFirer(t.pool, { misfireThresholdMs: 60_000, missedCap: 3 });
    const ids: Record<string, string> = {};
    for (const policy of ['skip', 'once', 'all'] as const) {
      const schedule = await newSchedule(`missed-${policy}`, cron, { missedPolicy: policy });
      await setNextRun(schedule.id, missed[0]!);
      ids[policy] = schedule.id;
    }
    await firer.runOnce();
    const fired = async (policy: string) => (await runsOf(ids[policy]!)).map((r) => r.fire_time.toISOString());
    assert.deepEqual(await fired('skip'), []);
    assert.deepEqual(await fired('once'), [missed[4]!.toISOString()]);
    assert.deepEqual(await fired('all'), missed.slice(2).map((d) => d.toISOString()));
    assert.equal((await jobsIn('missed-skip')).length, 0);
    assert.equal((await jobsIn('missed-once')).length, 1);
    assert.equal((await jobsIn('missed-all')).length, 3);
    const next = cronNext(cron, 'UTC', new Date())!.getTime();
    for (const id of Object.values(ids)) {
      assert.equal((await t.pool.query('SELECT next_run_at FROM spool.schedules WHERE id = $1', [id])).rows[0].next_run_at.getTime(), next);
    }
    assert.equal(firer.counters.get('missed_skipped'), 5 + 4 + 2);
  });

  it('resuming a paused schedule continues from its next tick, without a burst of the ticks it slept through', async () => {
    const schedule = await newSchedule('resume-no-burst', '* * * * * *');
    await scheduleUpdate(t.pool, org, schedule.id, { isActive: false });
    await setNextRun(schedule.id, new Date(Date.now() - 30_000)); // as if it had been due for the 30 s it was paused
    const resumedAt = Date.now();
    const resumed = await scheduleUpdate(t.pool, org, schedule.id, { isActive: true, recompute: true });
    assert.ok(resumed!.next_run_at!.getTime() > resumedAt - 1000, 'next_run_at is the first tick after resuming');
    await new ScheduleFirer(t.pool).runOnce();
    const runs = await runsOf(schedule.id);
    assert.ok(runs.every((r) => r.fire_time.getTime() > resumedAt - 1000), 'no tick of the paused period fired');
    assert.ok(runs.length <= Math.ceil((Date.now() - resumedAt) / 1000) + 1, `${runs.length} runs: no burst`);
    await scheduleUpdate(t.pool, org, schedule.id, { isActive: false });
  });

  it('records a failed run (and keeps going) when a job cannot be created, while other schedules in the batch still fire', async () => {
    await t.pool.query(`CREATE OR REPLACE FUNCTION public.refuse_broken_queue() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'queue broken is refusing jobs'; END $$`);
    await t.pool.query(`CREATE TRIGGER refuse_broken BEFORE INSERT ON spool.jobs FOR EACH ROW WHEN (NEW.queue_name = 'broken') EXECUTE FUNCTION public.refuse_broken_queue()`);
    try {
      const broken = await newSchedule('broken', '0 0 * * * *');
      const healthy = await newSchedule('healthy', '0 0 * * * *');
      const tick = cronPrevious('0 0 * * * *', 'UTC', new Date(), 1)[0]!;
      await setNextRun(broken.id, tick);
      await setNextRun(healthy.id, tick);
      const firer = new ScheduleFirer(t.pool, { misfireThresholdMs: 3_600_000 });
      await firer.runOnce();
      const [failedRun] = await runsOf(broken.id);
      assert.equal(failedRun!.status, 'failed');
      assert.equal(failedRun!.job_id, null);
      assert.match(failedRun!.error_message!, /refusing jobs/);
      assert.equal((await runsOf(healthy.id))[0]!.status, 'completed');
      assert.equal((await jobsIn('healthy')).length, 1);
      const brokenAfter = (await t.pool.query('SELECT next_run_at, run_count FROM spool.schedules WHERE id = $1', [broken.id])).rows[0];
      assert.ok(brokenAfter.next_run_at.getTime() > Date.now());
      assert.equal(brokenAfter.run_count, 0);
      assert.equal(firer.counters.get('failed'), 1);
    } finally {
      await t.pool.query('DROP TRIGGER refuse_broken ON spool.jobs');
    }
  });
});
