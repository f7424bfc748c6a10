/**
 * Processing jobs are not in the listing indexes (migration 043:
 * jobs_org_queue_status_idx and jobs_org_created_idx are partial on
 * status <> 'processing', so a claim writes two index entries instead of
 * four). Every statement that reads an organization's or a queue's jobs must
 * therefore spell that predicate (for the generic plans of prepared
 * statements, which cannot prove it from a parameter) and read processing
 * jobs in a branch of their own. A statement that forgot would fall back to
 * reading the whole table; this checks each one, generic and custom plans,
 * on a table where one organization holds 20,000 finished jobs and the one
 * asked about a few hundred, and checks the answers against plain counts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { jobClaim, jobInsertMany, jobList, jobStats } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;
let big: string;

const sql = (file: string) => readFileSync(new URL(`../src/ops/${file}`, import.meta.url), 'utf8');

before(async () => {
  t = await createTestDatabase('listing-plans');
  org = await createOrganization(t.pool);
  big = await createOrganization(t.pool);
  await jobInsertMany(t.pool, Array.from({ length: 20_000 }, (_, i) => ({ organizationId: big, queueName: `bulk-${i % 4}`, payload: { i } })));
  // Finished through the transitions the state machine allows.
  await t.pool.query(`UPDATE spool.jobs SET status = 'processing', lease_id = gen_random_uuid(), assigned_worker_id = 'w', started_at = now(), lease_expires_at = now() + interval '1 hour' WHERE organization_id = $1`, [big]);
  await t.pool.query(`UPDATE spool.jobs SET status = 'completed', phase = 'done', purge_on = spool.job_purge_on(organization_id, queue_name, 'completed'), lease_id = NULL, lease_expires_at = NULL, completed_at = now() WHERE organization_id = $1`, [big]);
  for (const queue of ['alpha', 'beta']) {
    await jobInsertMany(t.pool, Array.from({ length: 150 }, (_, i) => ({ organizationId: org, queueName: queue, payload: { i } })));
    await jobInsertMany(t.pool, Array.from({ length: 20 }, (_, i) => ({ organizationId: org, queueName: queue, payload: { i }, scheduledAt: new Date(Date.now() + 3_600_000) })));
    await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: `w-${queue}`, limit: 40, leaseSeconds: 600 });
  }
  // Many tenants, as in a real table: a generic plan's estimate for one
  // organization is then a small share of the rows, not half of them.
  const others = await Promise.all(Array.from({ length: 60 }, () => createOrganization(t.pool)));
  await jobInsertMany(t.pool, others.flatMap((o, i) => Array.from({ length: 4 }, () => ({ organizationId: o, queueName: `other-${i % 3}`, payload: {} }))));
  // Both partitions of spool.jobs (migration 046) as a real table holds them:
  // many tenants' finished jobs in jobs_done, and a big tenant's backlog in
  // jobs_live beside the other tenants' few live jobs.
  await t.pool.query(`UPDATE spool.jobs SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(organization_id, queue_name, 'cancelled'), completed_at = now()
                      WHERE organization_id = ANY ($1::uuid[]) AND id IN (SELECT min(id::text)::uuid FROM spool.jobs WHERE organization_id = ANY ($1::uuid[]) GROUP BY organization_id)`, [others]);
  await jobInsertMany(t.pool, Array.from({ length: 20_000 }, (_, i) => ({ organizationId: big, queueName: `backlog-${i % 4}`, payload: { i } })));
  // A queue whose only jobs are processing: not in the listing indexes at all.
  await jobInsertMany(t.pool, Array.from({ length: 5 }, (_, i) => ({ organizationId: org, queueName: 'only-running', payload: { i } })));
  await jobClaim(t.pool, { organizationId: org, queueName: 'only-running', workerId: 'w-r', limit: 5, leaseSeconds: 600 });
  await t.pool.query('ANALYZE spool.jobs');
});
after(async () => t.drop());

interface PlanNode { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; 'Subplan Name'?: string; Plans?: PlanNode[] }

/**
 * Sequential scans of spool.jobs or its partitions (migration 046), each
 * named with the node above it and the CTE or subplan it is in, so that a
 * failure says which part of the statement to look at.
 */
function seqScansOfJobs(node: PlanNode, parent = 'top', within = 'the main query'): string[] {
  const ofJobs = ['jobs', 'jobs_live', 'jobs_done'].includes(node['Relation Name'] ?? '');
  const here = node['Subplan Name'] ?? within;
  const own = node['Node Type'] === 'Seq Scan' && ofJobs ? [`${node['Relation Name']!} (under ${parent}, in ${here})`] : [];
  return [...own, ...(node.Plans ?? []).flatMap((child) => seqScansOfJobs(child, node['Node Type'], here))];
}

async function planOf(client: pg.PoolClient, text: string, types: string, args: string, mode: 'force_generic_plan' | 'force_custom_plan'): Promise<PlanNode> {
  await client.query(`SET plan_cache_mode = '${mode}'`);
  await client.query(`PREPARE probe${types ? `(${types})` : ''} AS ${text.trim().replace(/;\s*$/, '')}`);
  try {
    const explained = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE probe${types ? `(${args})` : ''}`);
    return explained.rows[0]['QUERY PLAN'][0].Plan as PlanNode;
  } finally {
    await client.query('DEALLOCATE probe');
  }
}

const listText = sql('job-list.sql').replaceAll('{{order}}', 'created_at DESC, id DESC');

const STATEMENTS: { name: string; text: () => string; types: string; args: () => string }[] = [
  { name: 'job-list.sql', text: () => listText, types: 'uuid, text, text, text, bigint, bigint, text[]', args: () => `'${org}', NULL, NULL, NULL, 50, 0, NULL` },
  { name: 'job-list.sql (status processing)', text: () => listText, types: 'uuid, text, text, text, bigint, bigint, text[]', args: () => `'${org}', NULL, 'processing', NULL, 50, 0, NULL` },
  { name: 'job-list.sql (queue, status pending)', text: () => listText, types: 'uuid, text, text, text, bigint, bigint, text[]', args: () => `'${org}', 'alpha', 'pending', NULL, 50, 0, NULL` },
  { name: 'job-stats.sql', text: () => sql('job-stats.sql'), types: 'uuid, text[]', args: () => `'${org}', NULL` },
  { name: 'queue-job-counts.sql', text: () => sql('queue-job-counts.sql'), types: 'uuid, text', args: () => `'${org}', 'alpha'` },
  { name: 'queue-get-effective.sql', text: () => sql('queue-get-effective.sql'), types: 'uuid, text', args: () => `'${org}', 'only-running'` },
  { name: 'queue-stats.sql', text: () => sql('queue-stats.sql'), types: 'uuid, text', args: () => `'${org}', 'alpha'` },
  { name: 'queue-delete.sql', text: () => sql('queue-delete.sql'), types: 'uuid, text', args: () => `'${org}', 'alpha'` },
  { name: 'realtime-queue-stats.sql', text: () => sql('realtime-queue-stats.sql'), types: 'uuid, text', args: () => `'${org}', 'alpha'` },
  { name: 'organization-active-jobs.sql', text: () => sql('organization-active-jobs.sql'), types: 'uuid, bigint', args: () => `'${org}', 1000` },
  { name: 'organization-blockers.sql', text: () => sql('organization-blockers.sql'), types: 'uuid', args: () => `'${org}'` },
  { name: 'organization-job-total.sql', text: () => sql('organization-job-total.sql'), types: 'uuid', args: () => `'${org}'` },
  { name: 'organization-usage.sql', text: () => sql('organization-usage.sql'), types: 'uuid[]', args: () => `'{${org}}'` },
  { name: 'organization-dashboard.sql', text: () => sql('organization-dashboard.sql'), types: 'uuid, text[]', args: () => `'${org}', NULL` },
  { name: 'organization-delete.sql', text: () => sql('organization-delete.sql'), types: 'uuid, boolean', args: () => `'${org}', false` },
  { name: 'organization-delete-jobs.sql', text: () => sql('organization-delete-jobs.sql'), types: 'uuid', args: () => `'${org}'` },
  { name: 'metrics-queue-gauges.sql', text: () => sql('metrics-queue-gauges.sql'), types: '', args: () => '' },
  { name: 'job-retention-delete.sql', text: () => sql('job-retention-delete.sql'), types: 'text[], int', args: () => `'{failed}', 1000` },
];

describe('readers of the listing indexes (processing jobs not in them)', () => {
  it('never read the whole jobs table, with generic or custom plans', async () => {
    const client = await t.pool.connect();
    const failures: string[] = [];
    try {
      for (const s of STATEMENTS) {
        for (const mode of ['force_generic_plan', 'force_custom_plan'] as const) {
          const plan = await planOf(client, s.text(), s.types, s.args(), mode);
          const scans = seqScansOfJobs(plan);
          if (scans.length > 0) failures.push(`${s.name} (${mode}): sequential scan(s) of ${scans.join(', ')}`);
        }
      }
    } finally {
      client.release();
    }
    assert.deepEqual(failures, []);
  });

  it('count processing jobs, which the listing indexes do not hold', async () => {
    const truth = await t.pool.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM spool.jobs WHERE organization_id = $1 GROUP BY status', [org]);
    const expected = Object.fromEntries(truth.rows.map((r) => [r.status, r.n]));
    assert.equal(expected.processing, 85);
    const stats = await jobStats(t.pool, org);
    for (const [status, n] of Object.entries(expected)) assert.equal(stats[status as keyof typeof stats], n, status);
    assert.equal(stats.total, 345);

    const counts = await t.pool.query<{ status: string; count: string }>(sql('queue-job-counts.sql'), [org, 'alpha']);
    assert.deepEqual(Object.fromEntries(counts.rows.map((r) => [r.status, Number(r.count)])), { pending: 110, scheduled: 20, processing: 40 });
    const effective = await t.pool.query(sql('queue-get-effective.sql'), [org, 'only-running']);
    assert.equal(effective.rows.length, 1, 'a queue whose jobs all run still exists');
    const total = await t.pool.query<{ total: string }>(sql('organization-job-total.sql'), [org]);
    assert.equal(Number(total.rows[0]!.total), 345);
    const active = await t.pool.query<{ active: string }>(sql('organization-active-jobs.sql'), [org, 1000]);
    assert.equal(Number(active.rows[0]!.active), 345);
    const dashboard = await t.pool.query<{ total: string; pending: string; processing: string; queues: { name: string; pending: number; processing: number }[] }>(sql('organization-dashboard.sql'), [org, null]);
    const d = dashboard.rows[0]!;
    assert.deepEqual([Number(d.total), Number(d.pending), Number(d.processing)], [345, 220, 85]);
    assert.deepEqual(d.queues.map((q) => [q.name, q.pending, q.processing]), [['alpha', 110, 40], ['beta', 110, 40], ['only-running', 0, 5]]);
    const gauges = await t.pool.query<{ organization_id: string; queue_name: string; status: string; count: string }>(sql('metrics-queue-gauges.sql'));
    const running = gauges.rows.filter((r) => r.organization_id === org && r.status === 'processing').map((r) => [r.queue_name, Number(r.count)]);
    assert.deepEqual(running.sort(), [['alpha', 40], ['beta', 40], ['only-running', 5]]);
  });

  it('list processing jobs among the others, in order, with paging', async () => {
    const all = await t.pool.query<{ id: string }>('SELECT id FROM spool.jobs WHERE organization_id = $1 ORDER BY created_at DESC, id DESC', [org]);
    const paged: string[] = [];
    for (let offset = 0; offset < 400; offset += 60) {
      paged.push(...(await jobList(t.pool, { organizationId: org, limit: 60, offset })).map((j) => j.id));
    }
    assert.deepEqual(paged, all.rows.map((r) => r.id));
    const processing = await jobList(t.pool, { organizationId: org, status: 'processing', limit: 500, offset: 0 });
    assert.equal(processing.length, 85);
    const pending = await jobList(t.pool, { organizationId: org, status: 'pending', queueName: 'beta', limit: 500, offset: 0, orderBy: 'priority', orderDir: 'asc' });
    assert.equal(pending.length, 110);
  });
});
