import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPool, LEADER_CHANNEL, LeaderElector, leaderAcquire, Notifier, type Db, type Service } from '@spool/engine';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;

before(async () => {
  t = await createTestDatabase('leader');
});
after(async () => t.drop());

/** A service that only records whether it runs. */
class Probe implements Service {
  readonly name = 'probe';
  running = false;
  starts = 0;
  start(): void {
    this.running = true;
    this.starts += 1;
  }
  stop(): void {
    this.running = false;
  }
}

async function until(condition: () => boolean, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(10);
  }
  return Date.now() - started;
}

async function lease(name: string) {
  return (await t.pool.query<{ holder: string; expires_at: Date; acquired_at: Date }>('SELECT holder, expires_at, acquired_at FROM spool.leader_leases WHERE name = $1', [name])).rows[0];
}

describe('LeaderElector', () => {
  it('elects exactly one of three electors and runs the services there only', async () => {
    const probes = [new Probe(), new Probe(), new Probe()];
    const electors = probes.map((probe, i) => new LeaderElector(t.pool, { lease: 'three', holder: `e${i}`, ttlMs: 3000, services: [probe] }));
    electors.forEach((e) => e.start());
    try {
      await until(() => electors.some((e) => e.isLeader), 2000);
      await sleep(1200); // a few renewal rounds
      assert.equal(electors.filter((e) => e.isLeader).length, 1);
      assert.equal(probes.filter((p) => p.running).length, 1);
      const leader = electors.find((e) => e.isLeader)!;
      assert.equal((await lease('three'))!.holder, leader.holder);
      assert.ok((leader.counters.get('renewals') ?? 0) >= 1);
    } finally {
      await Promise.all(electors.map((e) => e.stop()));
    }
    assert.ok(probes.every((p) => !p.running));
    assert.equal(await lease('three'), undefined, 'stopping released the lease');
  });

  it('replaces a crashed leader (lease not released) within the lease time, and not before the lease ran out', async () => {
    const ttlMs = 1500;
    const a = new LeaderElector(t.pool, { lease: 'crash', holder: 'a', ttlMs, services: [new Probe()] });
    const bProbe = new Probe();
    const b = new LeaderElector(t.pool, { lease: 'crash', holder: 'b', ttlMs, services: [bProbe] });
    a.start();
    await until(() => a.isLeader, 2000);
    b.start();
    await sleep(700);
    assert.equal(b.isLeader, false);
    const before = await lease('crash');
    await a.stop({ release: false }); // a crash: services gone, lease row left behind
    try {
      const tookMs = await until(() => b.isLeader, ttlMs + 3000);
      assert.ok(tookMs <= ttlMs + 1000, `takeover after ${tookMs} ms (lease ${ttlMs} ms)`);
      assert.ok(bProbe.running);
      const now = await lease('crash');
      assert.equal(now!.holder, 'b');
      assert.ok(now!.acquired_at.getTime() >= before!.expires_at.getTime(), 'the follower waited for the old lease to run out');
    } finally {
      await b.stop();
    }
  });

  it('hands over at once on a graceful stop: the release NOTIFY wakes the follower', async () => {
    const ttlMs = 10_000;
    const notifier = new Notifier({ connectionString: t.url });
    const a = new LeaderElector(t.pool, { lease: 'handover', holder: 'a', ttlMs });
    const b = new LeaderElector(t.pool, { lease: 'handover', holder: 'b', ttlMs });
    notifier.listen(LEADER_CHANNEL, () => b.wake());
    await notifier.start();
    try {
      a.start();
      await until(() => a.isLeader, 2000);
      b.start();
      await sleep(300);
      await a.stop();
      const tookMs = await until(() => b.isLeader, ttlMs);
      assert.ok(tookMs < 1000, `handover took ${tookMs} ms`);
    } finally {
      await b.stop();
      await notifier.stop();
    }
  });

  it('steps down on its own clock when it cannot renew (database unreachable for it), and another takes over', async () => {
    const ttlMs = 1200;
    const starved: Db = createPool({ connectionString: t.url, max: 1 });
    const aProbe = new Probe();
    const a = new LeaderElector(starved, { lease: 'starved', holder: 'a', ttlMs, services: [aProbe] });
    const b = new LeaderElector(t.pool, { lease: 'starved', holder: 'b', ttlMs });
    a.start();
    await until(() => a.isLeader, 2000);
    b.start();
    const hog = await starved.connect(); // a's only connection: its renewals now wait forever
    try {
      const demotedAfter = await until(() => !a.isLeader, ttlMs + 3000);
      assert.ok(demotedAfter <= ttlMs + 500, `stepped down after ${demotedAfter} ms`);
      assert.equal(aProbe.running, false);
      await until(() => b.isLeader, ttlMs + 3000);
    } finally {
      hog.release();
      await b.stop();
      await a.stop();
      await starved.end();
    }
  });

  it('renews only while it holds the lease: a lease taken by someone else is not stolen back', async () => {
    const first = await leaderAcquire(t.pool, 'direct', 'x', 5000);
    assert.equal(first.acquired, true);
    const other = await leaderAcquire(t.pool, 'direct', 'y', 5000);
    assert.equal(other.acquired, false);
    assert.equal(other.currentHolder, 'x');
    assert.ok(other.remainingMs! > 4000 && other.remainingMs! <= 5000);
    assert.equal((await leaderAcquire(t.pool, 'direct', 'x', 5000)).acquired, true);
    await t.pool.query(`UPDATE spool.leader_leases SET expires_at = now() - interval '1 ms' WHERE name = 'direct'`);
    assert.equal((await leaderAcquire(t.pool, 'direct', 'y', 5000)).acquired, true);
    assert.equal((await leaderAcquire(t.pool, 'direct', 'x', 5000)).acquired, false);
  });
});
