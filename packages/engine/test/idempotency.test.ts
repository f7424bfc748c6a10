import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { jobInsertMany } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { waitUntilBlocked } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('idempotency');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

async function jobsWithKey(key: string): Promise<{ id: string; organization_id: string; payload: unknown }[]> {
  const result = await t.pool.query('SELECT id, organization_id, payload FROM spool.jobs WHERE idempotency_key = $1 ORDER BY organization_id', [key]);
  return result.rows;
}

async function createEvents(id: string): Promise<number> {
  const result = await t.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM spool.job_events WHERE job_id = $1 AND event = 'create'`, [id]);
  return result.rows[0]!.n;
}


describe('idempotency keys', () => {
  it('resolves 50 concurrent inserts with one key (separate connections) to one job: 1 created, 49 created:false, same id', async () => {
    const key = 'concurrent-key';
    const clients = await Promise.all(Array.from({ length: 50 }, async () => {
      const client = new pg.Client({ connectionString: t.url });
      await client.connect();
      return client;
    }));
    // The gate locks the organization row: every insert waits on it in its
    // statement's organization lock (migration 013), so all 50 really are in
    // flight together when the gate opens and race on the key.
    const gate = new pg.Client({ connectionString: t.url });
    await gate.connect();
    try {
      await gate.query('BEGIN');
      await gate.query('SELECT 1 FROM spool.organizations WHERE id = $1 FOR UPDATE', [org]);
      const pids = await Promise.all(clients.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid));
      const pending = Promise.all(clients.map((client, n) =>
        jobInsertMany(client, [{ organizationId: org, queueName: 'idem', payload: { n }, idempotencyKey: key }])));
      await waitUntilBlocked(t.pool, pids);
      await gate.query('COMMIT');
      const results = await pending;
      const flat = results.map((r) => r[0]!);
      assert.equal(flat.filter((r) => r.created).length, 1, 'exactly one insert created the job');
      assert.equal(flat.filter((r) => !r.created).length, 49);
      assert.equal(new Set(flat.map((r) => r.id)).size, 1, 'every caller got the same id');
      const rows = await jobsWithKey(key);
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.id, flat[0]!.id);
      assert.equal(await createEvents(rows[0]!.id), 1, 'one create history row');
    } finally {
      await gate.end();
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('keeps the first payload when a repeat arrives later', async () => {
    const key = 'sequential-key';
    const [first] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'idem', payload: { v: 1 }, idempotencyKey: key }]);
    const [second] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'idem', payload: { v: 2 }, idempotencyKey: key }]);
    assert.equal(first!.created, true);
    assert.deepEqual(second, { id: first!.id, created: false, status: 'pending' });
    assert.deepEqual((await jobsWithKey(key)).map((r) => r.payload), [{ v: 1 }]);
  });

  it('resolves duplicate keys inside one batch to one job', async () => {
    const key = 'batch-key';
    const results = await jobInsertMany(t.pool, [
      { organizationId: org, queueName: 'idem', payload: { n: 0 }, idempotencyKey: key },
      { organizationId: org, queueName: 'idem', payload: { n: 1 } },
      { organizationId: org, queueName: 'idem', payload: { n: 2 }, idempotencyKey: key },
      { organizationId: org, queueName: 'idem', payload: { n: 3 }, idempotencyKey: key },
    ]);
    assert.deepEqual(results.map((r) => r.created), [true, true, false, false]);
    assert.equal(results[2]!.id, results[0]!.id);
    assert.equal(results[3]!.id, results[0]!.id);
    assert.notEqual(results[1]!.id, results[0]!.id);
    const rows = await jobsWithKey(key);
    assert.equal(rows.length, 1);
    assert.deepEqual(rows[0]!.payload, { n: 0 });
  });

  it('keeps keys per organization: the same key in two organizations makes two jobs', async () => {
    const key = 'shared-across-orgs';
    const other = await createOrganization(t.pool);
    const results = await jobInsertMany(t.pool, [
      { organizationId: org, queueName: 'idem', payload: {}, idempotencyKey: key },
      { organizationId: other, queueName: 'idem', payload: {}, idempotencyKey: key },
    ]);
    assert.deepEqual(results.map((r) => r.created), [true, true]);
    assert.notEqual(results[0]!.id, results[1]!.id);
    const [again] = await jobInsertMany(t.pool, [{ organizationId: other, queueName: 'idem', payload: {}, idempotencyKey: key }]);
    assert.deepEqual(again, { id: results[1]!.id, created: false, status: 'pending' });
    const rows = await jobsWithKey(key);
    assert.equal(rows.length, 2);
    assert.deepEqual(new Set(rows.map((r) => r.organization_id)), new Set([org, other]));
  });

  it('does not write history or change the existing job on a repeat', async () => {
    const key = 'repeat-no-history';
    const [first] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'idem', payload: {}, idempotencyKey: key }]);
    await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'idem', payload: {}, idempotencyKey: key }]);
    assert.equal(await createEvents(first!.id), 1);
  });
});
