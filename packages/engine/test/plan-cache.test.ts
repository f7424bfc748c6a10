/**
 * plan_cache_mode on the pool's connections (PoolOptions.planCacheMode).
 * In PostgreSQL's `auto` mode a prepared statement keeps a generic plan only
 * while its estimated cost stays under the average of the first five custom
 * plans, and that average is never refreshed. The capped claim (the
 * larger statement) is then planned for its values on every call, on an
 * empty queue and after the queue filled and was analyzed; a forced generic
 * plan is planned once per invalidation, whatever the statistics did.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPool, jobClaim, jobInsertMany, queueConfigUpsert, type PlanCacheMode } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('plan-cache');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

interface PlanCounts { mode: string; generic: number; custom: number }

/**
 * The claim's plans on one connection: six claims of an empty queue, then
 * 2,000 jobs loaded and analyzed, then ten claims of 100. A capped queue
 * (a concurrency limit that never binds) is claimed by the capped statement.
 */
async function claimPlansAcrossAnalyze(mode: PlanCacheMode | undefined, queue: string, capped = false): Promise<PlanCounts> {
  const pool = createPool({ connectionString: t.url, max: 1, applicationName: 'spool-test-plan-cache', planCacheMode: mode });
  const statement = capped ? 'spool_job_claim_capped' : 'spool_job_claim';
  if (capped) await queueConfigUpsert(t.pool, org, queue, { concurrencyLimit: 100_000 });
  try {
    const claim = () => jobClaim(pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 100, leaseSeconds: 60 });
    for (let i = 0; i < 6; i++) assert.equal((await claim()).length, 0);
    await jobInsertMany(t.pool, Array.from({ length: 2000 }, (_, i) => ({ organizationId: org, queueName: queue, payload: { i } })));
    await t.pool.query('ANALYZE spool.jobs_live');
    let claimed = 0;
    for (let i = 0; i < 10; i++) claimed += (await claim()).length;
    assert.equal(claimed, 1000);
    const { rows } = await pool.query<PlanCounts>(`SELECT current_setting('plan_cache_mode') AS mode, generic_plans::int AS generic, custom_plans::int AS custom
                                                   FROM pg_prepared_statements WHERE name = $1`, [statement]);
    assert.equal(rows.length, 1, `the claim ran as the named statement ${statement}`);
    return rows[0]!;
  } finally {
    await pool.end();
  }
}

describe('plan_cache_mode of a pool', () => {
  it('force_generic_plan: neither claim is ever planned for its values, before or after the statistics change', async () => {
    assert.deepEqual(await claimPlansAcrossAnalyze('force_generic_plan', 'generic'), { mode: 'force_generic_plan', generic: 16, custom: 0 });
    assert.deepEqual(await claimPlansAcrossAnalyze('force_generic_plan', 'generic-capped', true), { mode: 'force_generic_plan', generic: 16, custom: 0 });
  });

  it('left to the server (auto): the capped claim is planned for its values on every call', async () => {
    const plans = await claimPlansAcrossAnalyze(undefined, 'auto', true);
    assert.equal(plans.mode, 'auto');
    // Five custom plans to learn from; the generic plan never wins against
    // their average, and after the ANALYZE every one of the ten is a custom plan too.
    assert.ok(plans.custom >= 15, `custom plans: ${JSON.stringify(plans)}`);
  });

  it('refuses a mode PostgreSQL does not have', () => {
    assert.throws(() => createPool({ connectionString: t.url, planCacheMode: 'always_generic' as PlanCacheMode }), /planCacheMode must be one of force_generic_plan, auto, force_custom_plan \(got "always_generic"\)/);
  });
});
