import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { jobClaim, jobInsertMany } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('fenced-batch-plans');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const sql = (file: string) => readFileSync(new URL(`../src/ops/${file}`, import.meta.url), 'utf8');

interface PlanNode { 'Node Type': string; 'Index Name'?: string; 'Shared Hit Blocks'?: number; Plans?: PlanNode[] }

function indexesUsed(node: PlanNode, into = new Set<string>()): Set<string> {
  if (node['Index Name']) into.add(node['Index Name']);
  for (const child of node.Plans ?? []) indexesUsed(child, into);
  return into;
}

/**
 * The generic plan of a fenced batch statement, made while statistics say
 * no job is processing, run when a thousand are (a worker pool that claimed
 * ahead of its reports): each item must cost one primary-key probe, not a
 * read of every processing job of the organization.
 */
async function planWithManyProcessing(file: string, types: string, args: (ids: string[], leases: string[]) => string): Promise<{ indexes: Set<string>; hits: number }> {
  const queue = `plans-${file}`;
  await jobInsertMany(t.pool, Array.from({ length: 1000 }, (_, i) => ({ organizationId: org, queueName: queue, payload: { i } })));
  await t.pool.query('ANALYZE spool.jobs');
  const client = await t.pool.connect();
  try {
    await client.query("SET plan_cache_mode = 'force_generic_plan'");
    await client.query(`PREPARE fenced(${types}) AS ${sql(file)}`);
    const claimed = [];
    for (let i = 0; i < 10; i++) claimed.push(...(await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w1', limit: 100, leaseSeconds: 60 })));
    assert.equal(claimed.length, 1000);
    const batch = claimed.slice(0, 10);
    const explained = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE fenced(${args(batch.map((j) => j.id), batch.map((j) => j.lease_id!))})`);
    const plan = explained.rows[0]['QUERY PLAN'][0].Plan as PlanNode;
    await client.query('DEALLOCATE fenced');
    return { indexes: indexesUsed(plan), hits: plan['Shared Hit Blocks'] ?? 0 };
  } finally {
    client.release();
  }
}

const array = (values: string[]) => `'{${values.join(',')}}'`;

describe('fenced batch statements with many jobs processing', () => {
  it('complete probes one job per item, whatever the statistics said', async () => {
    const { indexes, hits } = await planWithManyProcessing('job-complete-many.sql', 'uuid, uuid[], text[], uuid[], text[]',
      (ids, leases) => `'${org}', ${array(ids)}, ${array(ids.map(() => 'w1'))}, ${array(leases)}, ${array(ids.map(() => 'NULL'))}`);
    assert.ok(!indexes.has('jobs_processing_idx'), `complete read jobs_processing_idx: ${[...indexes].join(', ')}`);
    assert.ok(hits < 400, `10 completions read ${hits} buffers`);
  });

  it('fail probes one job per item, whatever the statistics said', async () => {
    const { indexes, hits } = await planWithManyProcessing('job-fail-many.sql', 'uuid, uuid[], text[], uuid[], text[], boolean[]',
      (ids, leases) => `'${org}', ${array(ids)}, ${array(ids.map(() => 'w1'))}, ${array(leases)}, ${array(ids.map(() => 'boom'))}, ${array(ids.map(() => 'true'))}`);
    assert.ok(!indexes.has('jobs_processing_idx'), `fail read jobs_processing_idx: ${[...indexes].join(', ')}`);
    assert.ok(hits < 600, `10 failures read ${hits} buffers`);
  });
});
