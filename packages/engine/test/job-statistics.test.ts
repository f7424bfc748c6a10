/**
 * JobStatistics: a new database's jobs_live is analyzed once it holds
 * jobs, not a naptime later. Without statistics PostgreSQL 15 plans the
 * claim's ranges of a big queue on a listing index with a sort, which reads
 * every pending job on every claim (docs/performance.md).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { JobStatistics } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('job-statistics');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const claimSql = readFileSync(new URL('../src/ops/job-claim.sql', import.meta.url), 'utf8');

async function statisticsRows(): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stats WHERE schemaname = 'spool' AND tablename = 'jobs_live'");
  return rows[0]!.n;
}

/** The index names in the claim's generic plan for a claim of 50. */
async function claimPlan(): Promise<string> {
  const client = await t.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE claim_plan AS ${claimSql}`);
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE claim_plan('${org}', 'big', 50, 'w', 60, NULL)`);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

describe('JobStatistics', () => {
  it('analyzes jobs_live once it holds jobs and has no statistics, then leaves it to autovacuum', async () => {
    const service = new JobStatistics(t.pool, { idleMs: 1_000, settledMs: 60_000 });
    assert.equal(await service.runOnce(), 1_000, 'an empty table: look again soon');
    assert.equal(service.counters.get('analyzed'), undefined, 'nothing to analyze in an empty table');

    await t.pool.query(`
      INSERT INTO spool.jobs (organization_id, queue_name, status, payload)
      SELECT $1, 'big', 'pending', jsonb_build_object('i', i) FROM generate_series(1, 100000) AS i`, [org]);
    assert.equal(await statisticsRows(), 0, 'no statistics before the service runs');

    assert.equal(await service.runOnce(), 1_000);
    assert.equal(service.counters.get('analyzed'), 1);
    assert.ok((await statisticsRows()) > 0, 'jobs_live has column statistics');
    const plan = await claimPlan();
    assert.match(plan, /jobs_claim_idx/, plan);
    assert.doesNotMatch(plan, /jobs_org_queue_status_idx/, plan);

    assert.equal(await service.runOnce(), 60_000, 'with statistics: look again after settledMs');
    assert.equal(service.counters.get('analyzed'), 1, 'analyzed once');
  });
});
