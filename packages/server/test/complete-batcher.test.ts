import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jobClaim, jobCompleteMany, jobInsertMany, type JobRow } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { CompleteBatcher } from '../src/complete-batcher.js';

describe('CompleteBatcher (group commit for completions)', () => {
  let database: TestDatabase;
  let org: string;
  let other: string;
  before(async () => {
    database = await createTestDatabase('completebatch');
    org = await createOrganization(database.pool);
    other = await createOrganization(database.pool);
  });
  after(async () => database.drop());

  async function claimed(organizationId: string, queueName: string, n: number): Promise<JobRow[]> {
    await jobInsertMany(database.pool, Array.from({ length: n }, (_, i) => ({ organizationId, queueName, payload: { i } })));
    return jobClaim(database.pool, { organizationId, queueName, workerId: 'w', limit: n, leaseSeconds: 60 });
  }

  const statuses = async (ids: string[]) =>
    (await database.pool.query<{ status: string }>('SELECT status FROM spool.jobs WHERE id = ANY($1::uuid[])', [ids])).rows.map((r) => r.status);

  it('completes concurrent single completions of two organizations in one flush, each caller getting its own outcome', async () => {
    const mine = await claimed(org, 'cb', 30);
    const theirs = await claimed(other, 'cb', 20);
    const batcher = new CompleteBatcher(database.pool);
    const outcomes = await Promise.all([
      ...mine.map((job) => batcher.complete(org, { id: job.id, workerId: 'w', leaseId: job.lease_id, result: { id: job.id } })),
      ...theirs.map((job) => batcher.complete(other, { id: job.id, workerId: 'w', leaseId: job.lease_id })),
    ]);
    assert.equal(batcher.counters.flushes, 1);
    assert.ok(outcomes.every((o) => o.ok));
    assert.deepEqual(outcomes.map((o) => o.id), [...mine, ...theirs].map((j) => j.id));
    assert.deepEqual(new Set(await statuses([...mine, ...theirs].map((j) => j.id))), new Set(['completed']));
    const results = await database.pool.query<{ id: string; result: { id: string } }>('SELECT id, result FROM spool.jobs WHERE id = ANY($1::uuid[])', [mine.map((j) => j.id)]);
    assert.ok(results.rows.every((r) => r.result.id === r.id), 'each result stored on its own job');
  });

  it("a completion under another organization's id is refused as not found, without touching the job", async () => {
    const [job] = await claimed(org, 'cb-tenancy', 1);
    const batcher = new CompleteBatcher(database.pool);
    const outcome = await batcher.complete(other, { id: job!.id, workerId: 'w', leaseId: job!.lease_id });
    assert.deepEqual(outcome, { id: job!.id, ok: false, reason: 'not_found' });
    assert.deepEqual(await statuses([job!.id]), ['processing']);
  });

  it('of concurrent completes of one job (stale lease, current lease, a repeat) exactly the current one succeeds', async () => {
    const [job] = await claimed(org, 'cb-fence', 1);
    const stale = '00000000-0000-4000-8000-000000000000';
    const batcher = new CompleteBatcher(database.pool);
    const [old, current, repeat] = await Promise.all([
      batcher.complete(org, { id: job!.id, workerId: 'w', leaseId: stale }),
      batcher.complete(org, { id: job!.id, workerId: 'w', leaseId: job!.lease_id }),
      batcher.complete(org, { id: job!.id, workerId: 'w', leaseId: job!.lease_id }),
    ]);
    assert.equal(old!.ok, false);
    assert.equal(current!.ok, true);
    assert.equal(repeat!.ok, false, 'the repeat is judged after the first: the job is no longer processing');
    assert.equal(batcher.counters.flushes, 3, 'one job never shares a statement with itself');
    const history = await database.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM spool.job_events WHERE job_id = $1 AND event = 'complete'", [job!.id]);
    assert.equal(history.rows[0]!.n, 1);
  });

  it('jobCompleteMany given one job twice (stale and current lease) credits only the item that matches the fence', async () => {
    const [job] = await claimed(org, 'cb-dup', 1);
    const stale = '00000000-0000-4000-8000-000000000001';
    const outcomes = await jobCompleteMany(database.pool, org, [
      { id: job!.id, workerId: 'w', leaseId: stale },
      { id: job!.id, workerId: 'w', leaseId: job!.lease_id },
      { id: job!.id, workerId: 'w', leaseId: job!.lease_id },
    ]);
    assert.deepEqual(outcomes.map((o) => o.ok), [false, true, false]);
  });
});
