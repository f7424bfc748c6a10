import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { loadJobsAsIs } from '../../../test-support/job-fixtures.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('constraints');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

/**
 * Inserts a job row straight into the table, bypassing the engine's operations
 * and the state machine (a new job starts pending or scheduled: state-machine.test.ts),
 * so that a row in any status meets the CHECKs here.
 */
async function insertRaw(columns: Record<string, unknown>): Promise<void> {
  const row: Record<string, unknown> = { organization_id: org, queue_name: 'raw', status: 'pending', payload: '{}', ...columns };
  const names = Object.keys(row);
  await loadJobsAsIs(t.pool, (c) => c.query(
    `INSERT INTO spool.jobs (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`,
    Object.values(row),
  ));
}

/** Asserts the insert fails on exactly the named CHECK constraint. */
async function refusedBy(constraint: string, columns: Record<string, unknown>): Promise<void> {
  await assert.rejects(insertRaw(columns), (err: { code?: string; constraint?: string }) => {
    assert.equal(err.code, '23514', 'check_violation');
    assert.equal(err.constraint, constraint);
    return true;
  });
}

const lease = { assigned_worker_id: 'w', lease_id: '00000000-0000-7000-8000-000000000001', lease_expires_at: new Date(Date.now() + 60_000) };

describe('jobs CHECK constraints', () => {
  it('accepts a processing row that holds a full lease (so the refusals below are about the lease)', async () => {
    await insertRaw({ status: 'processing', ...lease });
  });

  it('refuses a processing row without a lease', async () => {
    await refusedBy('jobs_lease_iff_processing', { status: 'processing' });
  });

  it('refuses a processing row with a lease id but no worker', async () => {
    await refusedBy('jobs_lease_iff_processing', { status: 'processing', ...lease, assigned_worker_id: null });
  });

  it('refuses a pending row that holds a lease', async () => {
    await refusedBy('jobs_lease_iff_processing', { status: 'pending', ...lease });
  });

  it('refuses a finished row without completed_at, and an unfinished one with it', async () => {
    await refusedBy('jobs_finished_iff_completed_at', { status: 'completed' });
    await refusedBy('jobs_finished_iff_completed_at', { status: 'pending', completed_at: new Date() });
  });

  it('refuses a scheduled row without scheduled_at', async () => {
    await refusedBy('jobs_scheduled_has_time', { status: 'scheduled' });
  });

  it('refuses unknown statuses and out-of-range fields', async () => {
    await refusedBy('jobs_status_check', { status: 'running' });
    await refusedBy('jobs_priority_check', { priority: 101 });
    await refusedBy('jobs_max_retries_check', { max_retries: -1 });
    await refusedBy('queue_name_format', { queue_name: 'has space' });
  });

  it('refuses an update that sets a malformed queue name (the rule is checked where the name is written)', async () => {
    await insertRaw({ queue_name: 'raw-rename' });
    await assert.rejects(
      t.pool.query(`UPDATE spool.jobs SET queue_name = 'has space' WHERE queue_name = 'raw-rename'`),
      (err: { code?: string; constraint?: string }) => err.code === '23514' && err.constraint === 'queue_name_format',
    );
  });

  it('refuses an update that would leave a processing job without its lease', async () => {
    await insertRaw({ status: 'processing', queue_name: 'raw-update', ...lease });
    await assert.rejects(
      t.pool.query(`UPDATE spool.jobs SET lease_id = NULL WHERE queue_name = 'raw-update'`),
      (err: { constraint?: string }) => err.constraint === 'jobs_lease_iff_processing',
    );
  });
});
