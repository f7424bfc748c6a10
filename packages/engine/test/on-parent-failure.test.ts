/**
 * What a parent's final failure does to its dependents (migration 035,
 * docs/workflows.md "When a parent fails"): block, cancel, continue, on
 * every path that ends a job without success, in the statement that ends it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  dlqReplayBatch,
  dlqReplayCreate,
  jobCancelMany,
  jobClaim,
  jobCompleteMany,
  jobDependenciesAdd,
  jobDependenciesAddTx,
  jobDependencyResults,
  jobExpire,
  jobFailMany,
  jobInsertMany,
  jobReleaseWorker,
  jobRescueExpired,
  jobRetryMany,
  jobSnooze,
  workflowCreate,
  workflowGet,
  type OnParentFailure,
  type WorkflowJobInput,
} from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('on-parent-failure');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

async function claim(queue: string, worker = 'w', limit = 10): Promise<string[]> {
  return (await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: worker, limit, leaseSeconds: 60 })).map((j) => j.id);
}

async function complete(id: string, worker = 'w') {
  const [outcome] = await jobCompleteMany(t.pool, org, [{ id, workerId: worker, result: { done: id } }]);
  assert.ok(outcome!.ok, `completed ${id}`);
}

async function deadLetter(id: string, error = 'boom', worker = 'w') {
  const [outcome] = await jobFailMany(t.pool, org, [{ id, workerId: worker, error, retryable: false }]);
  assert.ok(outcome?.ok && outcome.status === 'deadletter', `dead-lettered ${id}`);
}

async function state(id: string): Promise<{ status: string; dependencies_met: boolean | null; dependencies_remaining: number | null; last_error: string | null }> {
  const row = await t.pool.query('SELECT status, dependencies_met, dependencies_remaining, last_error FROM spool.jobs WHERE id = $1', [id]);
  return row.rows[0];
}

async function statuses(ids: Record<string, string>): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, id] of Object.entries(ids)) out[key] = (await state(id)).status;
  return out;
}

async function cancelHistory(id: string) {
  const rows = await t.pool.query('SELECT event, from_status, to_status, actor, details, message FROM spool.job_history WHERE job_id = $1 AND event = $2', [id, 'cancel']);
  return rows.rows;
}

/** A workflow of `jobs` in queue `queue`; ids by key. */
async function workflow(queue: string, jobs: Omit<WorkflowJobInput, 'queueName' | 'payload'>[], onParentFailure?: OnParentFailure) {
  const created = await workflowCreate(t.pool, {
    organizationId: org,
    name: `wf ${queue}`,
    onParentFailure,
    jobs: jobs.map((job) => ({ ...job, queueName: queue, payload: { key: job.key } })),
  });
  return { workflowId: created.workflowId, id: Object.fromEntries(created.jobIds.map((j) => [j.key, j.jobId])) as Record<string, string> };
}

const chain = (policy?: OnParentFailure) => [
  { key: 'A' },
  { key: 'B', dependsOn: ['A'], onParentFailure: policy },
  { key: 'C', dependsOn: ['B'], onParentFailure: policy },
];

describe('cancel', () => {
  it('cancels a chain A → B → C when A dead-letters, with history and workflow counters', async () => {
    const { workflowId, id } = await workflow('cancel-chain', chain(), 'cancel');
    assert.deepEqual(await claim('cancel-chain'), [id.A]);
    await deadLetter(id.A!, 'A broke');
    assert.deepEqual(await statuses(id), { A: 'deadletter', B: 'cancelled', C: 'cancelled' });
    const [b] = await cancelHistory(id.B!);
    assert.equal(b.from_status, 'pending');
    assert.equal(b.to_status, 'cancelled');
    assert.equal(b.actor, null);
    assert.deepEqual(b.details, { reason: 'parent_failed', parent_id: id.A, parent_status: 'deadletter', on_parent_failure: 'cancel' });
    assert.match(b.message, new RegExp(`dependency ${id.A} ended deadletter`));
    const [c] = await cancelHistory(id.C!);
    assert.deepEqual(c.details, { reason: 'parent_failed', parent_id: id.B, parent_status: 'cancelled', on_parent_failure: 'cancel' });
    assert.match((await state(id.C!)).last_error!, /on_parent_failure: cancel/);
    const wf = (await workflowGet(t.pool, org, workflowId))!;
    assert.deepEqual([wf.status, wf.failed_jobs, wf.cancelled_jobs, wf.blocked_jobs], ['failed', 1, 2, 0]);
    assert.ok(wf.completed_at);
    assert.deepEqual(await claim('cancel-chain'), []);
  });

  it('cancels on every unsuccessful ending: cancel, expiry, lease expiry, snooze and release after a cancel request', async () => {
    // A pending parent cancelled by hand.
    const manual = await workflow('cancel-manual', chain('cancel'));
    assert.equal((await jobCancelMany(t.pool, org, [manual.id.A!], 'api_key:test')).get(manual.id.A!)!.outcome, 'cancelled');
    assert.deepEqual(await statuses(manual.id), { A: 'cancelled', B: 'cancelled', C: 'cancelled' });
    assert.equal((await cancelHistory(manual.id.B!))[0].details.parent_status, 'cancelled');

    // A pending parent whose expires_at passed.
    const expiring = await workflow('cancel-expire', chain('cancel'));
    await t.pool.query("UPDATE spool.jobs SET expires_at = now() - interval '1 second' WHERE id = $1", [expiring.id.A]);
    assert.ok(await jobExpire(t.pool, 100) >= 1);
    assert.deepEqual(await statuses(expiring.id), { A: 'cancelled', B: 'cancelled', C: 'cancelled' });

    // A processing parent whose lease ran out with no retry left.
    const leased = await workflow('cancel-lease', [{ key: 'A', maxRetries: 0 }, ...chain('cancel').slice(1)]);
    await claim('cancel-lease');
    await t.pool.query("UPDATE spool.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [leased.id.A]);
    assert.ok((await jobRescueExpired(t.pool, 100)).deadlettered >= 1);
    assert.deepEqual(await statuses(leased.id), { A: 'deadletter', B: 'cancelled', C: 'cancelled' });

    // Snoozed, and released by its worker, after a cancel request: both end the parent cancelled.
    const snoozed = await workflow('cancel-snooze', chain('cancel'));
    await claim('cancel-snooze');
    assert.equal((await jobCancelMany(t.pool, org, [snoozed.id.A!])).get(snoozed.id.A!)!.outcome, 'cancel_requested');
    assert.deepEqual(await statuses(snoozed.id), { A: 'processing', B: 'pending', C: 'pending' }, 'a request alone settles nothing');
    const outcome = await jobSnooze(t.pool, { organizationId: org, id: snoozed.id.A!, workerId: 'w', delaySecs: 5 });
    assert.ok(outcome.ok && outcome.status === 'cancelled');
    assert.deepEqual(await statuses(snoozed.id), { A: 'cancelled', B: 'cancelled', C: 'cancelled' });

    const released = await workflow('cancel-release', chain('cancel'));
    await claim('cancel-release', 'leaving');
    await jobCancelMany(t.pool, org, [released.id.A!]);
    assert.equal(await jobReleaseWorker(t.pool, org, 'leaving', 'deregistered'), 1);
    assert.deepEqual(await statuses(released.id), { A: 'cancelled', B: 'cancelled', C: 'cancelled' });
    for (const w of [manual, expiring, leased, snoozed, released]) {
      const row = (await workflowGet(t.pool, org, w.workflowId))!;
      assert.equal(row.blocked_jobs, 0, `${row.name}: nothing left blocked`);
      assert.equal(row.cancelled_jobs + row.failed_jobs, 3, `${row.name}: every job counted`);
    }
  });

  it('cancels 200 dependents of one parent in the statement that cancels it', async () => {
    const jobs = [{ key: 'root' }, ...Array.from({ length: 200 }, (_, i) => ({ key: `d${i}`, dependsOn: ['root'] }))];
    const { workflowId, id } = await workflow('cancel-wide', jobs, 'cancel');
    const cancelled = await jobCancelMany(t.pool, org, [id.root!]);
    assert.equal(cancelled.get(id.root!)!.outcome, 'cancelled');
    const counts = await t.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM spool.jobs WHERE workflow_id = $1 GROUP BY status', [workflowId]);
    assert.deepEqual(counts.rows, [{ status: 'cancelled', n: 201 }]);
    const history = await t.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM spool.job_history WHERE organization_id = $1 AND event = 'cancel' AND details->>'parent_id' = $2", [org, id.root]);
    assert.equal(history.rows[0]!.n, 200);
    const wf = (await workflowGet(t.pool, org, workflowId))!;
    assert.deepEqual([wf.status, wf.cancelled_jobs, wf.blocked_jobs], ['cancelled', 201, 0]);
  });

  it('cancels a job of its own batch once: a workflow cancel takes parent and dependents together', async () => {
    const { workflowId, id } = await workflow('cancel-batch', chain(), 'cancel');
    const outcomes = await jobCancelMany(t.pool, org, Object.values(id));
    assert.deepEqual([...outcomes.values()].map((o) => o.outcome), ['cancelled', 'cancelled', 'cancelled']);
    assert.equal((await cancelHistory(id.B!)).length, 1);
    assert.equal((await cancelHistory(id.B!))[0].details, null, 'cancelled as asked, not for its parent');
    const wf = (await workflowGet(t.pool, org, workflowId))!;
    assert.deepEqual([wf.cancelled_jobs, wf.blocked_jobs], [3, 0]);
  });
});

describe('continue', () => {
  it('runs B after A fails for good; B sees A\'s error; C follows B as usual', async () => {
    const { workflowId, id } = await workflow('continue-chain', chain('continue'));
    await claim('continue-chain');
    await deadLetter(id.A!, 'A could not reach the API');
    assert.deepEqual(await state(id.B!), { status: 'pending', dependencies_met: true, dependencies_remaining: 0, last_error: null });
    assert.deepEqual(await claim('continue-chain'), [id.B]);
    const results = await jobDependencyResults(t.pool, { organizationId: org, jobId: id.B!, limit: 100, offset: 0 });
    assert.equal(results!.length, 1);
    assert.deepEqual({ ...results![0], completed_at: null }, {
      job_id: id.A, key: 'A', queue_name: 'continue-chain', status: 'deadletter', result: null, error: 'A could not reach the API',
      completed_at: null, dependency_type: 'completion', on_parent_failure: 'continue',
    });
    assert.ok(results![0]!.completed_at instanceof Date);
    await complete(id.B!);
    const forC = await jobDependencyResults(t.pool, { organizationId: org, jobId: id.C!, limit: 100, offset: 0 });
    assert.deepEqual(forC!.map((r) => [r.status, r.result, r.error]), [['completed', { done: id.B }, null]]);
    assert.deepEqual(await claim('continue-chain'), [id.C]);
    await complete(id.C!);
    const wf = (await workflowGet(t.pool, org, workflowId))!;
    assert.deepEqual([wf.status, wf.completed_jobs, wf.failed_jobs, wf.blocked_jobs], ['failed', 2, 1, 0], 'a job did fail');
    assert.equal(await jobDependencyResults(t.pool, { organizationId: org, jobId: '00000000-0000-4000-8000-000000000000', limit: 1, offset: 0 }), null);
    assert.deepEqual(await jobDependencyResults(t.pool, { organizationId: org, jobId: id.A!, limit: 1, offset: 0 }), []);
  });

  it('counts the edge again when the failed parent is retried, so it is not counted twice', async () => {
    const a = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'continue-retry-a', payload: {} }]))[0]!.id;
    const x = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'continue-retry-x', payload: {} }]))[0]!.id;
    const b = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'continue-retry-b', payload: {} }]))[0]!.id;
    await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: b, dependsOn: [a], onParentFailure: 'continue' });
    await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: b, dependsOn: [x] });
    await claim('continue-retry-a');
    await deadLetter(a);
    assert.equal((await state(b)).dependencies_remaining, 1, 'A counts as satisfied, X does not');
    await jobRetryMany(t.pool, { organizationId: org, ids: [a], resetRetryCount: false, from: ['deadletter'] });
    assert.equal((await state(b)).dependencies_remaining, 2, 'A waits again');
    await claim('continue-retry-x');
    await complete(x);
    assert.equal((await state(b)).dependencies_met, false, 'still waits for the retried A');
    await claim('continue-retry-a');
    await complete(a);
    assert.deepEqual(await claim('continue-retry-b'), [b]);
  });

  it('counts the edge again when a DLQ replay moves the parent, as a retry does', async () => {
    const a = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'continue-replay-a', payload: {} }]))[0]!.id;
    const x = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'continue-replay-x', payload: {} }]))[0]!.id;
    const b = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'continue-replay-b', payload: {} }]))[0]!.id;
    await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: b, dependsOn: [a], onParentFailure: 'continue' });
    await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: b, dependsOn: [x] });
    await claim('continue-replay-a');
    await deadLetter(a);
    assert.equal((await state(b)).dependencies_remaining, 1, 'A counts as satisfied, X does not');
    const replay = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'continue-replay-a', actor: 'test' }))!;
    const done = await dlqReplayBatch(t.pool, { organizationId: org, id: replay.id, batchSize: replay.batch_size });
    assert.equal(done?.moved, 1);
    assert.deepEqual(await state(b), { status: 'pending', dependencies_met: false, dependencies_remaining: 2, last_error: null }, 'A waits again');
    await claim('continue-replay-x');
    await complete(x);
    assert.equal((await state(b)).dependencies_met, false, 'still waits for the replayed A');
    await claim('continue-replay-a');
    await complete(a);
    assert.deepEqual(await claim('continue-replay-b'), [b]);
  });
});

describe('block', () => {
  it('keeps B blocked after A dead-letters; a retry of A that completes releases it', async () => {
    const { workflowId, id } = await workflow('block-chain', chain());
    await claim('block-chain');
    await deadLetter(id.A!);
    assert.deepEqual(await state(id.B!), { status: 'pending', dependencies_met: false, dependencies_remaining: 1, last_error: null });
    assert.equal((await workflowGet(t.pool, org, workflowId))!.status, 'failed');
    await jobRetryMany(t.pool, { organizationId: org, ids: [id.A!], resetRetryCount: false, from: ['deadletter'] });
    assert.deepEqual(await claim('block-chain'), [id.A]);
    await complete(id.A!);
    assert.deepEqual(await claim('block-chain'), [id.B]);
  });
});

describe('defaults and overrides', () => {
  it('takes the workflow default for edges a job does not name, a job-wide policy, or one per dependency key', async () => {
    const { workflowId, id } = await workflow('mixed', [
      { key: 'A' },
      { key: 'Z' },
      { key: 'def', dependsOn: ['A'] },
      { key: 'own', dependsOn: ['A'], onParentFailure: 'block' },
      { key: 'perKey', dependsOn: ['A', 'Z'], onParentFailure: { A: 'continue' } },
    ], 'cancel');
    const policies = await t.pool.query<{ job_id: string; depends_on_job_id: string; on_parent_failure: string }>(
      'SELECT job_id, depends_on_job_id, on_parent_failure FROM spool.job_dependencies WHERE job_id = ANY($1)', [[id.def, id.own, id.perKey]]);
    const policy = (child: string, parent: string) => policies.rows.find((r) => r.job_id === id[child] && r.depends_on_job_id === id[parent])!.on_parent_failure;
    assert.deepEqual([policy('def', 'A'), policy('own', 'A'), policy('perKey', 'A'), policy('perKey', 'Z')], ['cancel', 'block', 'continue', 'cancel']);
    const claimed = await claim('mixed', 'w', 1);
    assert.deepEqual(claimed, [id.A]);
    await deadLetter(id.A!);
    assert.deepEqual(await statuses({ def: id.def!, own: id.own!, perKey: id.perKey! }), { def: 'cancelled', own: 'pending', perKey: 'pending' });
    assert.deepEqual(await state(id.perKey!), { status: 'pending', dependencies_met: false, dependencies_remaining: 1, last_error: null }, 'waits for Z');
    await claim('mixed');
    await complete(id.Z!);
    assert.deepEqual(await claim('mixed'), [id.perKey]);
    const wf = (await workflowGet(t.pool, org, workflowId))!;
    assert.deepEqual([wf.failed_jobs, wf.cancelled_jobs, wf.completed_jobs, wf.blocked_jobs], [1, 1, 1, 1]);
  });

  it('refuses a policy that is none, and a per-key policy for a key outside depends_on', async () => {
    await assert.rejects(workflow('bad', [{ key: 'A' }, { key: 'B', dependsOn: ['A'], onParentFailure: 'skip' as OnParentFailure }]), /jobs\[1\]\.on_parent_failure must be one of block, cancel, continue/);
    await assert.rejects(workflow('bad', [{ key: 'A' }, { key: 'B', onParentFailure: { A: 'cancel' } }]), /jobs\[1\]\.on_parent_failure names "A", which is not in its depends_on/);
    await assert.rejects(workflow('bad', [{ key: 'A' }], 'stop' as OnParentFailure), /^ValidationError: on_parent_failure must be one of/);
  });

  it('settles each dependent by its own edges through a cascade: cancel, then continue below it', async () => {
    const { id } = await workflow('cascade', [
      { key: 'A' },
      { key: 'B', dependsOn: ['A'], onParentFailure: 'cancel' },
      { key: 'C', dependsOn: ['B'], onParentFailure: 'continue' },
      { key: 'D', dependsOn: ['B'], onParentFailure: 'block' },
    ]);
    await claim('cascade');
    await deadLetter(id.A!);
    assert.deepEqual(await statuses(id), { A: 'deadletter', B: 'cancelled', C: 'pending', D: 'pending' });
    assert.deepEqual(await claim('cascade'), [id.C], 'C runs after its cancelled parent; D waits');
  });
});

describe('fail batches', () => {
  it('fails jobs with and without dependents in one batch, settling only those with dependents', async () => {
    const { id } = await workflow('batch', [
      { key: 'plain1' },
      { key: 'parentCancel' },
      { key: 'plain2' },
      { key: 'parentContinue' },
      { key: 'retrying', maxRetries: 3 },
      { key: 'childCancel', dependsOn: ['parentCancel'], onParentFailure: 'cancel' },
      { key: 'childContinue', dependsOn: ['parentContinue'], onParentFailure: 'continue' },
      { key: 'childOfRetry', dependsOn: ['retrying'], onParentFailure: 'cancel' },
    ]);
    assert.equal((await claim('batch')).length, 5);
    const outcomes = await jobFailMany(t.pool, org, [
      { id: id.plain1!, workerId: 'w', error: 'e1', retryable: false },
      { id: id.parentCancel!, workerId: 'w', error: 'e2', retryable: false },
      { id: id.plain2!, workerId: 'w', error: 'e3', retryable: false },
      { id: id.parentContinue!, workerId: 'w', error: 'e4', retryable: false },
      { id: id.retrying!, workerId: 'w', error: 'e5' },
    ]);
    assert.deepEqual(outcomes.map((o) => o.ok && o.status), ['deadletter', 'deadletter', 'deadletter', 'deadletter', 'pending']);
    assert.deepEqual(await statuses({ childCancel: id.childCancel!, childContinue: id.childContinue!, childOfRetry: id.childOfRetry! }),
      { childCancel: 'cancelled', childContinue: 'pending', childOfRetry: 'pending' });
    assert.equal((await state(id.childContinue!)).dependencies_met, true);
    assert.equal((await state(id.childOfRetry!)).dependencies_met, false, 'a retry is no final failure');
  });

  it('calls nothing for a batch without dependents (the settle node is never executed)', async () => {
    const [job] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'plain-explain', payload: {} }]);
    await claim('plain-explain');
    const sql = (await import('node:fs')).readFileSync(new URL('../src/ops/job-fail-many.sql', import.meta.url), 'utf8');
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      const plan = await client.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${sql}`, [org, [job!.id], ['w'], [null], ['e'], [false]]);
      const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      assert.match(text, /Function Scan on job_dependents_settle s \(never executed\)/, text);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });
});

describe('dependencies added to existing jobs', () => {
  it('honours the policy for a dependency that has already failed: continue is satisfied, cancel cancels at once', async () => {
    const dead = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'late-dead', payload: {} }]))[0]!.id;
    await claim('late-dead');
    await deadLetter(dead);
    const cont = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'late-continue', payload: {} }]))[0]!.id;
    const added = await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: cont, dependsOn: [dead], onParentFailure: 'continue' });
    assert.deepEqual([added.dependenciesMet, added.status, added.added[0]!.on_parent_failure], [true, 'pending', 'continue']);
    const canc = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'late-cancel', payload: {} }]))[0]!.id;
    const grandchild = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'late-cancel', payload: {} }]))[0]!.id;
    await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: grandchild, dependsOn: [canc], onParentFailure: 'cancel' });
    const cancelled = await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: canc, dependsOn: [dead], onParentFailure: 'cancel' });
    assert.deepEqual([cancelled.dependenciesMet, cancelled.status], [false, 'cancelled']);
    assert.deepEqual(await statuses({ canc, grandchild, cont }), { canc: 'cancelled', grandchild: 'cancelled', cont: 'pending' });
    const blocked = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'late-block', payload: {} }]))[0]!.id;
    const kept = await jobDependenciesAddTx(t.pool, { organizationId: org, jobId: blocked, dependsOn: [dead] });
    assert.deepEqual([kept.dependenciesMet, kept.status], [false, 'pending']);
  });

  it('settles an edge added while its parent fails (the failure waits on the adder\'s lock and sees the edge)', async () => {
    const parent = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'race-parent', payload: {} }]))[0]!.id;
    const child = (await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'race-child', payload: {} }]))[0]!.id;
    await claim('race-parent');
    const adder = new pg.Client({ connectionString: t.url });
    await adder.connect();
    try {
      await adder.query('BEGIN');
      await jobDependenciesAdd(adder, { organizationId: org, jobId: child, dependsOn: [parent], onParentFailure: 'continue' });
      const failing = deadLetter(parent);
      await new Promise((r) => setTimeout(r, 150));
      await adder.query('COMMIT');
      await failing;
    } finally {
      await adder.end();
    }
    assert.deepEqual(await claim('race-child'), [child]);
  });
});
