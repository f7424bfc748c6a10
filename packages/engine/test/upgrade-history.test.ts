import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jobClaim, jobCompleteMany, jobHistory, migrate } from '@spool/engine';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

/**
 * An existing database moves to history rows of many jobs (migration 021)
 * without losing a job or its history: jobs in every state, with history as
 * the earlier writers left it (one row per job and transition), keep their
 * timelines, and carry on through the new writers.
 */
let t: TestDatabase;
let org: string;
const BEFORE = 21;

before(async () => {
  t = await createTestDatabase('upgrade', { empty: true });
  await migrate(t.pool, undefined, { below: BEFORE });
  org = (await t.pool.query<{ id: string }>(`INSERT INTO spool.organizations (name, slug) VALUES ('Upgrade', 'upgrade') RETURNING id`)).rows[0]!.id;
});
after(async () => t.drop());

type Step = [event: string, from: string | null, to: string | null, worker?: string, message?: string];

/** A job as the earlier schema held it: its row and one history row per step. */
async function oldJob(status: string, steps: Step[]): Promise<{ id: string; lease: string | null }> {
  const lease = status === 'processing' ? crypto.randomUUID() : null;
  const { rows: [job] } = await t.pool.query<{ id: string }>(
    `INSERT INTO spool.jobs (organization_id, queue_name, status, payload, scheduled_at, started_at, completed_at, assigned_worker_id, lease_id, lease_expires_at, last_error, retry_count)
     VALUES ($1, 'upgrade', $2, '{"v": 1}',
             CASE WHEN $2 = 'scheduled' THEN now() + interval '1 day' END,
             CASE WHEN $2 IN ('processing', 'completed', 'failed', 'deadletter') THEN now() END,
             CASE WHEN $2 IN ('completed', 'failed', 'deadletter', 'cancelled') THEN now() END,
             CASE WHEN $2 IN ('processing', 'completed', 'failed', 'deadletter') THEN 'w-old' END,
             $3::uuid, CASE WHEN $2 = 'processing' THEN now() + interval '1 hour' END,
             CASE WHEN $2 IN ('failed', 'deadletter') THEN 'boom' END, 0)
     RETURNING id`, [org, status, lease]);
  for (const [event, from, to, worker, message] of steps) {
    await t.pool.query(
      `INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id, message)
       VALUES ($1, $2, 'upgrade', $3, $4, $5, $6, $7, $8)`,
      [org, job!.id, event, from, to, worker ?? null, worker && event !== 'create' ? lease : null, message ?? null]);
  }
  return { id: job!.id, lease };
}

describe('upgrade to history rows of many jobs (migration 021)', () => {
  it('keeps every job and its timeline, and the jobs carry on afterwards', async () => {
    const created: Step = ['create', null, 'pending'];
    const claimed: Step = ['claim', 'pending', 'processing', 'w-old'];
    const cases: Record<string, Step[]> = {
      pending: [created],
      scheduled: [['create', null, 'scheduled']],
      processing: [created, claimed],
      completed: [created, claimed, ['complete', 'processing', 'completed', 'w-old']],
      failed: [created, claimed, ['fail_final', 'processing', 'failed', 'w-old', 'boom']],
      deadletter: [created, claimed, ['fail_final', 'processing', 'deadletter', 'w-old', 'boom']],
      cancelled: [created, ['cancel', 'pending', 'cancelled']],
    };
    const jobs = new Map<string, { id: string; lease: string | null }>();
    for (const [status, steps] of Object.entries(cases)) jobs.set(status, await oldJob(status, steps));
    const timelineOf = async (id: string) => (await jobHistory(t.pool, org, id, 100)).map((e) => [e.event, e.from_status, e.to_status, e.worker_id, e.message]);
    // What GET /jobs/{id}/history answered before (ops/job-history.sql of then).
    const before = new Map<string, unknown>();
    for (const [status, job] of jobs) {
      const rows = await t.pool.query('SELECT event, from_status, to_status, worker_id, message FROM spool.job_history WHERE organization_id = $1 AND job_id = $2 ORDER BY id', [org, job.id]);
      before.set(status, rows.rows.map((r) => [r.event, r.from_status, r.to_status, r.worker_id, r.message]));
    }

    // A job waiting on the running one (an edge from before migration 024, which stamps the jobs others depend on).
    const { rows: [blocked] } = await t.pool.query<{ id: string }>(
      `INSERT INTO spool.jobs (organization_id, queue_name, status, payload, dependency_mode, dependencies_met, dependencies_remaining)
       VALUES ($1, 'upgrade-after', 'pending', '{}', 'all', false, 1) RETURNING id`, [org]);
    await t.pool.query('INSERT INTO spool.job_dependencies (organization_id, job_id, depends_on_job_id) VALUES ($1, $2, $3)', [org, blocked!.id, jobs.get('processing')!.id]);

    const result = await migrate(t.pool);
    assert.ok(result.applied.includes('021_batched_history'), result.applied.join());

    for (const [status, job] of jobs) {
      const row = (await t.pool.query<{ status: string }>('SELECT status FROM spool.jobs WHERE id = $1', [job.id])).rows[0];
      assert.equal(row?.status, status, `the ${status} job is still there`);
      const timeline = await jobHistory(t.pool, org, job.id, 100);
      assert.deepEqual(timeline.map((e) => [e.event, e.from_status, e.to_status, e.worker_id, e.message]), before.get(status), `the ${status} job's timeline is unchanged`);
      const ids = timeline.map((e) => e.id);
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'ids still increase');
      assert.equal(new Set(ids).size, ids.length);
    }

    // The running job completes through the new writer; the pending one runs from start to end.
    const running = jobs.get('processing')!;
    const [done] = await jobCompleteMany(t.pool, org, [{ id: running.id, workerId: 'w-old', leaseId: running.lease! }]);
    assert.equal(done!.ok, true);
    assert.deepEqual((await timelineOf(running.id)).map((e) => e[0]), ['create', 'claim', 'complete']);
    const released = await t.pool.query<{ dependencies_met: boolean }>('SELECT dependencies_met FROM spool.jobs WHERE id = $1', [blocked!.id]);
    assert.equal(released.rows[0]!.dependencies_met, true, "the completion released the job that waited on it before the upgrade");
    const [claim] = await jobClaim(t.pool, { organizationId: org, queueName: 'upgrade', workerId: 'w-new', limit: 1, leaseSeconds: 30 });
    assert.equal(claim?.id, jobs.get('pending')!.id);
    await jobCompleteMany(t.pool, org, [{ id: claim!.id, workerId: 'w-new', leaseId: claim!.lease_id! }]);
    const timeline = await jobHistory(t.pool, org, claim!.id, 100);
    assert.deepEqual(timeline.map((e) => [e.event, e.worker_id, e.lease_id]), [
      ['create', null, null],
      ['claim', 'w-new', claim!.lease_id],
      ['complete', 'w-new', claim!.lease_id],
    ]);
    assert.ok(timeline[0]!.id < timeline[1]!.id && timeline[1]!.id < timeline[2]!.id, 'the old row comes before the new ones');
  });
});
