import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  jobCancelMany,
  jobClaim,
  jobCompleteMany,
  jobDependenciesAdd,
  jobDependenciesAddTx,
  jobFailMany,
  jobInsertMany,
  workflowCancel,
  workflowCreate,
  workflowGet,
  workflowJobs,
  workflowRetry,
  workflowTopologicalOrder,
} from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('workflow');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

async function claimOne(queue: string, worker = 'w'): Promise<string[]> {
  return (await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: worker, limit: 10, leaseSeconds: 60 })).map((j) => j.id);
}

async function complete(id: string, db: pg.Pool | pg.Client = t.pool, worker = 'w') {
  const [outcome] = await jobCompleteMany(db, org, [{ id, workerId: worker }]);
  assert.ok(outcome!.ok, `completed ${id}`);
}

async function diamond(queue: string, modeOfD: 'all' | 'any' = 'all') {
  const created = await workflowCreate(t.pool, {
    organizationId: org,
    name: `diamond ${queue}`,
    jobs: [
      { key: 'A', queueName: queue, payload: 'A' },
      { key: 'B', queueName: queue, payload: 'B', dependsOn: ['A'] },
      { key: 'C', queueName: queue, payload: 'C', dependsOn: ['A'] },
      { key: 'D', queueName: queue, payload: 'D', dependsOn: ['B', 'C'], dependencyMode: modeOfD },
    ],
  });
  const id = Object.fromEntries(created.jobIds.map((j) => [j.key, j.jobId])) as Record<'A' | 'B' | 'C' | 'D', string>;
  return { workflowId: created.workflowId, id };
}

describe('workflow graph validation', () => {
  it('orders a DAG and refuses cycles, unknown keys and duplicate keys', () => {
    assert.deepEqual(workflowTopologicalOrder([{ key: 'b', dependsOn: ['a'] }, { key: 'a' }]), ['a', 'b']);
    assert.throws(() => workflowTopologicalOrder([{ key: 'a', dependsOn: ['b'] }, { key: 'b', dependsOn: ['a'] }]), /cycle/);
    assert.throws(() => workflowTopologicalOrder([{ key: 'a', dependsOn: ['a'] }]), /cycle/);
    assert.throws(() => workflowTopologicalOrder([{ key: 'a', dependsOn: ['zz'] }]), /unknown key "zz"/);
    assert.throws(() => workflowTopologicalOrder([{ key: 'a' }, { key: 'a' }]), /twice/);
  });
});

describe('dependency release on completion', () => {
  it('runs A → {B, C} → D in dependency order and completes the workflow in the last completion', async () => {
    const { workflowId, id } = await diamond('diamond');
    assert.deepEqual(await claimOne('diamond'), [id.A]);
    await complete(id.A);
    assert.deepEqual((await claimOne('diamond')).sort(), [id.B, id.C].sort());
    await complete(id.B);
    assert.deepEqual(await claimOne('diamond'), [], 'D waits for C');
    await complete(id.C);
    assert.deepEqual(await claimOne('diamond'), [id.D]);
    const running = await workflowGet(t.pool, org, workflowId);
    assert.equal(running!.status, 'running');
    await complete(id.D);
    const done = await workflowGet(t.pool, org, workflowId);
    assert.equal(done!.status, 'completed');
    assert.equal(done!.completed_jobs, 4);
    assert.equal(done!.blocked_jobs, 0);
    assert.ok(done!.completed_at);
  });

  it('releases D exactly once when B and C complete in overlapping transactions', async () => {
    const { id } = await diamond('overlap');
    await claimOne('overlap');
    await complete(id.A);
    await claimOne('overlap');
    const c1 = new pg.Client({ connectionString: t.url });
    const c2 = new pg.Client({ connectionString: t.url });
    await c1.connect();
    await c2.connect();
    try {
      await c1.query('BEGIN');
      await c2.query('BEGIN');
      await complete(id.B, c1);
      const second = complete(id.C, c2); // waits on D's row, locked by c1's decrement
      await new Promise((r) => setTimeout(r, 150));
      await c1.query('COMMIT');
      await second;
      await c2.query('COMMIT');
    } finally {
      await c1.end();
      await c2.end();
    }
    const d = await t.pool.query('SELECT dependencies_met, dependencies_remaining FROM spool.jobs WHERE id = $1', [id.D]);
    assert.deepEqual(d.rows[0], { dependencies_met: true, dependencies_remaining: 0 });
    assert.deepEqual(await claimOne('overlap'), [id.D]);
  });

  it("mode 'any' releases a dependent on its first completed dependency", async () => {
    const { id } = await diamond('anymode', 'any');
    await claimOne('anymode');
    await complete(id.A);
    await claimOne('anymode');
    await complete(id.B);
    assert.deepEqual(await claimOne('anymode'), [id.D]);
  });
});

describe('failed, cancelled and retried dependencies', () => {
  it('keeps dependents of a dead-lettered job blocked, fails the workflow, and resumes it on retry', async () => {
    const { workflowId, id } = await diamond('deadletter');
    await claimOne('deadletter');
    await complete(id.A);
    await claimOne('deadletter');
    await complete(id.C);
    const [failed] = await jobFailMany(t.pool, org, [{ id: id.B, workerId: 'w', error: 'boom', retryable: false }]);
    assert.ok(failed?.ok && failed.status === 'deadletter');
    assert.deepEqual(await claimOne('deadletter'), [], 'D never becomes claimable');
    const wf = await workflowGet(t.pool, org, workflowId);
    assert.equal(wf!.status, 'failed');
    assert.equal(wf!.failed_jobs, 1);
    assert.equal(wf!.completed_jobs, 2);
    assert.equal(wf!.blocked_jobs, 1);

    const retried = await workflowRetry(t.pool, org, workflowId);
    assert.equal(retried.status, 'running');
    assert.equal(retried.failed_jobs, 0);
    assert.equal(retried.completed_at, null);
    assert.deepEqual(await claimOne('deadletter'), [id.B]);
    await complete(id.B);
    assert.deepEqual(await claimOne('deadletter'), [id.D]);
    await complete(id.D);
    assert.equal((await workflowGet(t.pool, org, workflowId))!.status, 'completed');
  });

  it('refuses to retry a workflow that is not failed', async () => {
    const { workflowId } = await diamond('noretry');
    await assert.rejects(workflowRetry(t.pool, org, workflowId), /failed/);
  });

  it('ends a workflow cancelled when a cancelled job leaves nothing runnable', async () => {
    const { workflowId, id } = await diamond('cancelone');
    const outcome = await jobCancelMany(t.pool, org, [id.A]);
    assert.equal(outcome.get(id.A)!.outcome, 'cancelled');
    const wf = await workflowGet(t.pool, org, workflowId);
    assert.equal(wf!.status, 'cancelled');
    assert.equal(wf!.cancelled_jobs, 1);
    const jobs = await workflowJobs(t.pool, org, workflowId);
    assert.deepEqual(jobs.map((j) => j.key), ['A', 'B', 'C', 'D']);
    assert.deepEqual(jobs.find((j) => j.key === 'D')!.depends_on.sort(), [id.B, id.C].sort());
  });
});

describe('status derived from the counters (migration 011 trigger)', () => {
  it('keeps an explicit cancel, and its completed_at, when the job still running then completes', async () => {
    const created = await workflowCreate(t.pool, { organizationId: org, name: 'cancel wins', jobs: [{ key: 'X', queueName: 'cancelwins', payload: 'X' }] });
    const [x] = await claimOne('cancelwins');
    const cancelled = await workflowCancel(t.pool, org, created.workflowId);
    assert.equal(cancelled.status, 'cancelled');
    assert.ok(cancelled.completed_at);
    // completed_jobs = total_jobs alone would read 'completed'.
    await complete(x!);
    const after = await workflowGet(t.pool, org, created.workflowId);
    assert.equal(after!.completed_jobs, 1);
    assert.equal(after!.status, 'cancelled');
    assert.equal(after!.completed_at!.getTime(), cancelled.completed_at!.getTime());
  });

  it('leaves an update that names no counter alone', async () => {
    const created = await workflowCreate(t.pool, { organizationId: org, name: 'no counters', jobs: [{ key: 'X', queueName: 'nocounters', payload: 'X' }] });
    // Its counters say nothing has ended: a derivation would not read 'failed'.
    await t.pool.query("UPDATE spool.workflows SET status = 'failed', description = 'set by hand' WHERE id = $1", [created.workflowId]);
    const row = await t.pool.query('SELECT status, completed_at FROM spool.workflows WHERE id = $1', [created.workflowId]);
    assert.deepEqual(row.rows[0], { status: 'failed', completed_at: null });
    await t.pool.query('UPDATE spool.workflows SET total_jobs = total_jobs WHERE id = $1', [created.workflowId]);
    const derived = await t.pool.query('SELECT status, completed_at FROM spool.workflows WHERE id = $1', [created.workflowId]);
    assert.deepEqual(derived.rows[0], { status: 'running', completed_at: null }, 'naming a counter re-derives the status');
  });
});

describe('adding dependencies to existing jobs', () => {
  async function job(queue: string): Promise<string> {
    return (await jobInsertMany(t.pool, [{ organizationId: org, queueName: queue, payload: {} }]))[0]!.id;
  }

  it('blocks the job until its new dependency completes, skipping self and cycle-closing edges', async () => {
    const a = await job('adddeps');
    const b = await job('adddeps-b');
    const added = await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: a, dependsOn: [b, a] });
    assert.equal(added.added.length, 1);
    assert.equal(added.dependenciesMet, false);
    const cycle = await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: b, dependsOn: [a] });
    assert.equal(cycle.added.length, 0, 'b → a would close a cycle');
    assert.deepEqual(await claimOne('adddeps'), []);
    const [claimedB] = await jobClaim(t.pool, { organizationId: org, queueName: 'adddeps-b', workerId: 'w', limit: 1, leaseSeconds: 60 });
    await complete(claimedB!.id);
    assert.deepEqual(await claimOne('adddeps'), [a]);
  });

  it('releases the dependent when its dependency completes while the edge is being added', async () => {
    const dependent = await job('race');
    const dependency = await job('race-dep');
    await jobClaim(t.pool, { organizationId: org, queueName: 'race-dep', workerId: 'w', limit: 1, leaseSeconds: 60 });
    const adder = new pg.Client({ connectionString: t.url });
    await adder.connect();
    try {
      await adder.query('BEGIN');
      await jobDependenciesAdd(adder, { organizationId: org, jobId: dependent, dependsOn: [dependency] });
      // This completion's snapshot predates the edge; it waits on the dependency's row lock.
      const completion = complete(dependency);
      await new Promise((r) => setTimeout(r, 150));
      await adder.query('COMMIT');
      await completion;
    } finally {
      await adder.end();
    }
    assert.deepEqual(await claimOne('race'), [dependent]);
  });
});
