/**
 * Jobs belong to an existing organization and go with it, without a
 * per-row foreign key (migration 013): inserts lock their organizations
 * once per statement, and deletion removes the jobs after the organization.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { jobInsertMany, organizationDelete } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
before(async () => {
  t = await createTestDatabase('organization-jobs');
});
after(async () => t.drop());

const count = async (sql: string, params: unknown[]) => (await t.pool.query<{ n: number }>(sql, params)).rows[0]!.n;

describe('jobs and their organization', () => {
  it('refuses a batch naming an organization that does not exist, as a whole, with foreign_key_violation', async () => {
    const org = await createOrganization(t.pool);
    await assert.rejects(
      jobInsertMany(t.pool, [
        { organizationId: org, queueName: 'fk', payload: { n: 1 } },
        { organizationId: randomUUID(), queueName: 'fk', payload: { n: 2 } },
      ]),
      (err: { code?: string; message?: string }) => err.code === '23503' && /organization that does not exist/.test(err.message ?? ''),
    );
    assert.equal(await count('SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = $1', ['fk']), 0, 'the existing organization\'s row was not inserted either');
    const [ok] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'fk', payload: { n: 3 } }, { organizationId: org, queueName: 'fk', payload: { n: 4 } }]);
    assert.equal(ok!.created, true, 'a batch of one organization, named twice, is fine');
  });

  it('deletes an organization\'s jobs, history and keyed answers with it', async () => {
    const org = await createOrganization(t.pool);
    const other = await createOrganization(t.pool);
    const [gone, kept] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'gone', payload: {} }, { organizationId: other, queueName: 'kept', payload: {} }]);
    await t.pool.query("UPDATE spool.jobs SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(organization_id, queue_name, 'cancelled'), completed_at = now() WHERE organization_id = $1", [org]);
    await t.pool.query("INSERT INTO spool.job_key_answers (organization_id, idempotency_key, job_id) VALUES ($1, 'a', $2), ($3, 'a', $4)", [org, gone!.id, other, kept!.id]);
    assert.deepEqual(await organizationDelete(t.pool, org), { deleted: true, blockers: null });
    assert.equal(await count('SELECT count(*)::int AS n FROM spool.jobs WHERE organization_id = $1', [org]), 0);
    assert.equal(await count('SELECT count(*)::int AS n FROM spool.job_history WHERE organization_id = $1', [org]), 0);
    assert.equal(await count('SELECT count(*)::int AS n FROM spool.job_key_answers WHERE organization_id = $1', [org]), 0);
    assert.equal(await count('SELECT count(*)::int AS n FROM spool.job_key_answers WHERE organization_id = $1', [other]), 1);
    assert.equal(await count('SELECT count(*)::int AS n FROM spool.jobs WHERE organization_id = $1', [other]), 1, 'another organization keeps its job');
  });

  it('an insert in flight when its organization is deleted leaves no orphan: the delete waits and takes its jobs', async () => {
    const org = await createOrganization(t.pool);
    const inserter = await t.pool.connect();
    try {
      await inserter.query('BEGIN');
      await jobInsertMany(inserter, [{ organizationId: org, queueName: 'racing', payload: {} }]);
      const deleting = organizationDelete(t.pool, org, true);
      // The delete must be blocked on the inserter's organization lock before the insert commits.
      for (let i = 0; ; i++) {
        const waiting = await count("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%DELETE FROM spool.organizations%'", []);
        if (waiting > 0) break;
        assert.ok(i < 500, 'the organization delete never waited for the insert');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await inserter.query('COMMIT');
      assert.deepEqual(await deleting, { deleted: true, blockers: null });
    } finally {
      inserter.release();
    }
    assert.equal(await count('SELECT count(*)::int AS n FROM spool.jobs WHERE organization_id = $1', [org]), 0, 'no orphaned job');
    assert.equal(await count('SELECT count(*)::int AS n FROM spool.job_history WHERE organization_id = $1', [org]), 0, 'no orphaned history');
  });
});
