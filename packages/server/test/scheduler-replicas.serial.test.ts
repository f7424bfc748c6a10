/**
 * Three Spool processes (packages/server/src/main.ts, as `npm start` runs
 * it) on one database: a schedule firing every second, then the leader is
 * killed (SIGKILL: no release, no cleanup). Every tick must have exactly one
 * run and one job, none missing (ticks due during the failover fire late),
 * none doubled; another process must take the lease over within its TTL
 * and keep reaping expired leases.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jobClaim, jobInsertMany, organizationCreate } from '@spool/engine';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { startReplica as startReplicaProcess, type Replica } from '../../../test-support/replica.js';

const LEADER_TTL_MS = 3000;
const startReplica = (databaseUrl: string, env: Record<string, string> = {}) => startReplicaProcess(databaseUrl, { SPOOL_LEADER_TTL_MS: String(LEADER_TTL_MS), ...env });

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

let t: TestDatabase;
let replicas: Replica[] = [];
let organizationId: string;
let apiKey: string;

before(async () => {
  t = await createTestDatabase('replicas');
  const slug = `replicas-${randomBytes(4).toString('hex')}`;
  const created = await organizationCreate(t.pool, { name: slug, slug, planTier: 'enterprise', environment: 'development' });
  organizationId = created.organization.id;
  apiKey = created.apiKey.key;
});

async function call(replica: Replica, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${replica.url}${path}`, { method, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: response.status === 204 ? null : await response.json() };
}
after(async () => {
  for (const replica of replicas) replica.child.kill('SIGKILL');
  await t.drop();
});

async function leaderHolder(): Promise<string | null> {
  const rows = await t.pool.query<{ holder: string }>(`SELECT holder FROM spool.leader_leases WHERE name = 'spool' AND expires_at > now()`);
  return rows.rows[0]?.holder ?? null;
}

const pidOf = (holder: string) => Number(holder.split('/')[1]);

describe('three Spool processes on one database', () => {
  it('fire one job per tick across a leader kill, and a new leader takes over within its TTL and keeps reaping', async (ctx) => {
    const startedAt = Date.now();
    replicas = await Promise.all([0, 1, 2].map(() => startReplica(t.url)));
    ctx.diagnostic(`three processes listening after ${Date.now() - startedAt} ms`);

    let holder: string | null = null;
    for (let i = 0; i < 100 && !holder; i++) {
      holder = await leaderHolder();
      if (!holder) await sleep(100);
    }
    assert.ok(holder, 'a leader was elected');
    const leader = replicas.find((r) => r.pid === pidOf(holder!));
    assert.ok(leader, `the leader ${holder} is one of the three processes`);
    const followers = replicas.filter((r) => r !== leader);

    const created = await call(followers[0]!, 'POST', '/api/v1/schedules', { name: 'every second', cron_expression: '* * * * * *', queue_name: 'replicated', payload_template: { n: 1 } });
    assert.equal(created.status, 201);
    await sleep(10_500);

    // A job whose worker will "die": its 5 s lease runs out after the leader is gone.
    await jobInsertMany(t.pool, [{ organizationId: organizationId, queueName: 'reaped', payload: {} }]);
    const [leased] = await jobClaim(t.pool, { organizationId: organizationId, queueName: 'reaped', workerId: 'doomed', limit: 1, leaseSeconds: 5 });
    assert.ok(leased);

    const killedAt = Date.now();
    leader!.child.kill('SIGKILL');
    await leader!.exited;
    replicas = followers;

    let newHolder: string | null = null;
    while (Date.now() - killedAt < LEADER_TTL_MS + 3000) {
      const current = await leaderHolder();
      if (current && current !== holder) {
        newHolder = current;
        break;
      }
      await sleep(50);
    }
    const takeoverMs = Date.now() - killedAt;
    assert.ok(newHolder, 'another process took the lease');
    assert.ok(followers.some((r) => r.pid === pidOf(newHolder!)));
    assert.ok(takeoverMs <= LEADER_TTL_MS + 1000, `takeover after ${takeoverMs} ms (TTL ${LEADER_TTL_MS} ms)`);

    let reaped = false;
    while (!reaped && Date.now() - killedAt < 15_000) {
      const row = await t.pool.query<{ status: string; retry_count: number }>('SELECT status, retry_count FROM spool.jobs WHERE id = $1', [leased!.id]);
      reaped = row.rows[0]!.status === 'pending' && row.rows[0]!.retry_count === 1;
      if (!reaped) await sleep(100);
    }
    assert.ok(reaped, 'the new leader returned the expired lease to pending');

    await sleep(2_000);
    const paused = await call(followers[1]!, 'POST', `/api/v1/schedules/${created.body.id}/pause`);
    assert.equal(paused.status, 200);
    await sleep(300);

    const runs = (await t.pool.query<{ fire_time: Date; job_id: string | null; status: string; created_at: Date | null }>(
      `SELECT r.fire_time, r.job_id, r.status, j.created_at
       FROM spool.schedule_runs r LEFT JOIN spool.jobs j ON j.id = r.job_id
       WHERE r.schedule_id = $1 AND NOT r.manual ORDER BY r.fire_time`, [created.body.id])).rows;
    const jobs = (await t.pool.query<{ id: string }>(`SELECT id FROM spool.jobs WHERE organization_id = $1 AND queue_name = 'replicated'`, [organizationId])).rows;

    assert.ok(runs.length >= 13, `${runs.length} ticks fired`);
    for (let i = 1; i < runs.length; i++) {
      assert.equal(runs[i]!.fire_time.getTime() - runs[i - 1]!.fire_time.getTime(), 1000, `tick after ${runs[i - 1]!.fire_time.toISOString()} is the next second (none missing, none doubled)`);
    }
    assert.ok(runs.every((r) => r.status === 'completed' && r.job_id && r.created_at), 'every run has its job');
    assert.equal(jobs.length, runs.length, 'exactly one job per tick');
    assert.deepEqual(new Set(jobs.map((j) => j.id)), new Set(runs.map((r) => r.job_id)));
    const firstAfterCreate = new Date(created.body.next_run_at).getTime();
    assert.equal(runs[0]!.fire_time.getTime(), firstAfterCreate, 'the first tick after creation fired');

    const steady = runs.filter((r) => r.fire_time.getTime() < killedAt - 1000).map((r) => r.created_at!.getTime() - r.fire_time.getTime()).sort((a, b) => a - b);
    const failover = runs.filter((r) => r.fire_time.getTime() >= killedAt - 1000).map((r) => r.created_at!.getTime() - r.fire_time.getTime());
    ctx.diagnostic(`three replicas: ${steady.length} ticks before the kill, firing delay p50 ${percentile(steady, 50)} ms, p99 ${percentile(steady, 99)} ms, max ${steady[steady.length - 1]} ms`);
    ctx.diagnostic(`leader killed: takeover after ${takeoverMs} ms; ticks during/after failover fired with delays ${failover.join(', ')} ms`);
    assert.ok(steady.every((d) => d >= 0), 'no job before its tick');

    await Promise.all(replicas.map(async (replica) => {
      replica.child.kill('SIGTERM');
      assert.equal(await replica.exited, 0, 'graceful stop');
    }));
    replicas = [];
    assert.equal(await leaderHolder(), null, 'the last leader released its lease on the way out');
  });

  it('stop every process over several ticks, restart: each missed-fire policy does what it says', async () => {
    const threshold = 3000;
    const env = { SPOOL_MISFIRE_THRESHOLD_MS: String(threshold) };
    replicas = [await startReplica(t.url, env)];
    const ids: Record<string, string> = {};
    for (const policy of ['skip', 'once', 'all']) {
      const created = await call(replicas[0]!, 'POST', '/api/v1/schedules', { name: policy, cron_expression: '* * * * * *', queue_name: `missed-${policy}`, payload_template: {}, missed_policy: policy });
      assert.equal(created.status, 201);
      ids[policy] = created.body.id;
    }
    await sleep(2500);
    replicas[0]!.child.kill('SIGTERM');
    assert.equal(await replicas[0]!.exited, 0);
    const stoppedAt = Date.now();
    await sleep(6000); // nobody runs: these ticks, and those of the restart, are due when the next process starts
    replicas = [await startReplica(t.url, env)];
    await sleep(2500);
    for (const id of Object.values(ids)) assert.equal((await call(replicas[0]!, 'POST', `/api/v1/schedules/${id}/pause`)).status, 200);

    const runsOf = async (id: string) => (await t.pool.query<{ fire_time: Date; late_ms: number }>(
      // Lateness at the firer's precision: it judges with the database clock read
      // into a JS Date, whole milliseconds (a tick exactly at the threshold is on time).
      `SELECT r.fire_time, (extract(epoch FROM date_trunc('milliseconds', j.created_at) - r.fire_time) * 1000)::float8 AS late_ms
       FROM spool.schedule_runs r JOIN spool.jobs j ON j.id = r.job_id WHERE r.schedule_id = $1 ORDER BY r.fire_time`, [id])).rows;
    // Ticks of the outage: due after the last process stopped, late by more than the threshold when the next one fired.
    const outage = (runs: { fire_time: Date; late_ms: number }[]) => runs.filter((r) => r.fire_time.getTime() > stoppedAt && r.late_ms > threshold);
    const skip = await runsOf(ids.skip!);
    const once = await runsOf(ids.once!);
    const all = await runsOf(ids.all!);

    assert.deepEqual(outage(skip), [], 'skip fired no missed tick');
    const firstAfter = skip.find((r) => r.fire_time.getTime() > stoppedAt)!;
    const lastBefore = skip.filter((r) => r.fire_time.getTime() <= stoppedAt).pop()!;
    assert.ok(firstAfter.fire_time.getTime() - lastBefore.fire_time.getTime() >= 4000, 'skip left the outage empty');

    assert.equal(outage(once).length, 1, 'once fired exactly one of the missed ticks');
    const stand = outage(once)[0]!;
    assert.ok(once.some((r) => r.fire_time.getTime() === stand.fire_time.getTime() + 1000 && r.late_ms <= threshold), 'it is the newest missed tick: the next one was on time');
    assert.ok(stand.fire_time.getTime() - stoppedAt >= 2000, 'older missed ticks were collapsed into it');

    const allTimes = all.map((r) => r.fire_time.getTime());
    assert.ok(allTimes.every((time, i) => i === 0 || time - allTimes[i - 1]! === 1000), 'all fired every tick');
    assert.ok(outage(all).length >= 3, `all fired ${outage(all).length} missed ticks`);

    for (const policy of ['skip', 'once', 'all']) {
      const runs = await runsOf(ids[policy]!);
      assert.equal(new Set(runs.map((r) => r.fire_time.getTime())).size, runs.length, `${policy}: no tick twice`);
      const jobs = await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = $1', [`missed-${policy}`]);
      assert.equal(jobs.rows[0]!.n, runs.length, `${policy}: one job per run`);
    }

    replicas[0]!.child.kill('SIGTERM');
    assert.equal(await replicas[0]!.exited, 0);
    replicas = [];
  });
});
