/**
 * Measures the claim (packages/engine/src/ops/job-claim.sql) on a big table:
 * 1,000,000 pending and 1,000,000 completed jobs in one queue. Prints, as
 * Markdown on stdout, the EXPLAIN (ANALYZE, BUFFERS) of the claim of 100
 * (custom and generic plan) and the median wall time of 20 claims of 100;
 * then the same with 100,000 of the pending jobs waiting out a retry
 * backoff (skip with SKIP_BACKOFF=1).
 *
 *   node --import tsx bench/claim-explain.ts > docs/claim-explain.md
 *
 * Without DATABASE_URL it starts its own embedded PostgreSQL in a temporary
 * directory with default (durable) settings; with it, it creates and drops a
 * throwaway database on that server. Progress goes to stderr.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool, jobClaim, migrate } from '@spool/engine';
import { loadJobsAsIs } from '../test-support/job-fixtures.js';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';

const PENDING = 1_000_000;
const FINISHED = 1_000_000;
const QUEUE = 'bench';
const LIMIT = 100;
const RUNS = 20;
const BACKOFF = 100_000;
const claimSql = readFileSync(new URL('../packages/engine/src/ops/job-claim.sql', import.meta.url), 'utf8');

const log = (message: string) => console.error(`[claim-explain] ${message}`);
const out: string[] = [];
const print = (line = '') => out.push(line);

async function timed<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const value = await fn();
  log(`${label}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return value;
}

/** Bulk load in one statement per status: generate_series, no per-row round trips. */
async function load(db: pg.Pool, org: string): Promise<void> {
  // Finished rows loaded as they are, not walked through claim and complete (job-fixtures.ts).
  // Straight into the partition of the day their window ends (made first, so none lands in the default partition).
  const purgeOn = `spool.job_purge_on($1, $2::text, 'completed', now() - interval '2 days')`;
  await db.query(`SELECT spool.jobs_done_partition_ensure(${purgeOn})`, [org, QUEUE]);
  await timed(`insert ${FINISHED} completed`, () => loadJobsAsIs(db, (c) => c.query(`
    INSERT INTO spool.jobs (organization_id, queue_name, status, phase, purge_on, payload, result, created_at, started_at, completed_at, updated_at)
    SELECT $1, $2::text, 'completed', 'done', (SELECT ${purgeOn}), jsonb_build_object('n', i), '{"ok":true}'::jsonb,
           now() - interval '2 days' + i * interval '1 ms', now() - interval '2 days' + i * interval '1 ms',
           now() - interval '2 days' + i * interval '1 ms' + interval '5 ms', now() - interval '1 day'
    FROM generate_series(1, $3::int) AS i`, [org, QUEUE, FINISHED])));
  await timed(`insert ${PENDING} pending`, () => db.query(`
    INSERT INTO spool.jobs (organization_id, queue_name, status, payload, created_at, updated_at)
    SELECT $1, $2, 'pending', jsonb_build_object('n', i),
           now() - interval '1 day' + i * interval '1 ms', now() - interval '1 day' + i * interval '1 ms'
    FROM generate_series(1, $3::int) AS i`, [org, QUEUE, PENDING]));
  await timed('ANALYZE', () => db.query('ANALYZE spool.jobs'));
}

async function explain(client: pg.PoolClient, org: string, generic: boolean): Promise<string> {
  await client.query('BEGIN');
  try {
    await client.query(`SET LOCAL plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
    await client.query(`PREPARE claim_explain AS ${claimSql}`);
    // $6 NULL: no claim floor, the queue read from its start.
    const args = `(${pg.escapeLiteral(org)}, ${pg.escapeLiteral(QUEUE)}, ${LIMIT}, 'bench-worker', 30, NULL)`;
    const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE claim_explain${args}`);
    return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE claim_explain');
  }
}

/** Wall time of one claim of 100 through the engine (named prepared statement), rolled back after. */
async function timeClaims(client: pg.PoolClient, org: string): Promise<number[]> {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    await client.query('BEGIN');
    const started = process.hrtime.bigint();
    const jobs = await jobClaim(client, { organizationId: org, queueName: QUEUE, workerId: 'bench-worker', limit: LIMIT, leaseSeconds: 30 });
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
    await client.query('ROLLBACK');
    if (jobs.length !== LIMIT) throw new Error(`claim returned ${jobs.length} jobs, expected ${LIMIT}`);
  }
  return times;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function describeData(client: pg.PoolClient): Promise<void> {
  const facts = await client.query<{ version: string; jobs: string; claim_idx: string; by_status: string }>(`
    SELECT current_setting('server_version') AS version,
           pg_size_pretty(pg_total_relation_size('spool.jobs')) AS jobs,
           pg_size_pretty(pg_relation_size('spool.jobs_claim_idx')) AS claim_idx,
           (SELECT string_agg(status || ' ' || n, ', ' ORDER BY status) FROM
              (SELECT status, count(*) AS n FROM spool.jobs GROUP BY status) s) AS by_status`);
  const settings = await client.query<{ name: string; setting: string }>(
    `SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'shared_buffers', 'full_page_writes') ORDER BY name`);
  const f = facts.rows[0]!;
  print(`PostgreSQL ${f.version}; ${cpus().length} CPUs; ${settings.rows.map((s) => `${s.name}=${s.setting}`).join(', ')}.`);
  print(`Rows: ${f.by_status}. spool.jobs with indexes: ${f.jobs}; jobs_claim_idx: ${f.claim_idx}.`);
  print();
}

async function section(client: pg.PoolClient, org: string, title: string, generic: boolean): Promise<void> {
  print(`## ${title}`);
  print();
  print('```');
  print(await explain(client, org, generic));
  print('```');
  print();
}

async function timing(client: pg.PoolClient, org: string): Promise<void> {
  const times = await timeClaims(client, org);
  print(`${RUNS} claims of ${LIMIT} through \`jobClaim\` (named prepared statement), each in a transaction rolled back:`);
  print(`median **${median(times).toFixed(2)} ms**; min ${Math.min(...times).toFixed(2)} ms; max ${Math.max(...times).toFixed(2)} ms.`);
  print();
  print(`All (ms): ${times.map((t) => t.toFixed(2)).join(', ')}`);
  // The machine may be shared: the load says how much to trust wall times.
  print(`Load average (1 min) right after: ${loadavg()[0]!.toFixed(2)}.`);
  print();
}

/**
 * Jobs waiting out a retry backoff stay `pending` with a future scheduled_at
 * (docs/compatibility.md §3.4). job-fail-many.sql also sets `in_backoff` (migration 008),
 * which keeps them out of jobs_claim_idx until the promoter clears it; this
 * shows that 100,000 of them do not slow the claim.
 */
async function backoffScenario(db: pg.Pool, client: pg.PoolClient, org: string): Promise<void> {
  await timed(`put ${BACKOFF} oldest pending jobs into retry backoff`, () => db.query(`
    UPDATE spool.jobs SET scheduled_at = now() + interval '1 hour', in_backoff = true, retry_count = 1, last_error = 'downstream outage'
    WHERE id IN (SELECT id FROM spool.jobs WHERE status = 'pending' ORDER BY priority DESC, created_at, id LIMIT $1)`, [BACKOFF]));
  await timed('VACUUM (ANALYZE)', () => db.query('VACUUM (ANALYZE) spool.jobs'));
  print(`# With ${BACKOFF.toLocaleString('en-US')} of the pending jobs waiting out a retry backoff`);
  print();
  print('A failed job with retries left stays `pending` with `scheduled_at` = now + backoff (docs/compatibility.md §3.4), and');
  print('`in_backoff` (migration 008) keeps it out of jobs_claim_idx until the promoter clears the flag at its time,');
  print('so the claim should not step over these rows.');
  print();
  await section(client, org, 'EXPLAIN (ANALYZE, BUFFERS), custom plan', false);
  await timing(client, org);
}

async function measure(url: string): Promise<void> {
  const db = createPool({ connectionString: url, max: 2, applicationName: 'claim-explain' });
  try {
    await timed('migrate', () => migrate(db));
    const org = (await db.query<{ id: string }>(`INSERT INTO spool.organizations (name, slug) VALUES ('bench', 'bench') RETURNING id`)).rows[0]!.id;
    await load(db, org);
    const client = await db.connect();
    try {
      await describeData(client);
      // Warm the cache the way a running server would be, before measuring.
      await explain(client, org, false);
      await section(client, org, 'EXPLAIN (ANALYZE, BUFFERS), custom plan (planned for these values; the server runs the generic plan below, DATABASE_PLAN_CACHE_MODE)', false);
      await section(client, org, 'EXPLAIN (ANALYZE, BUFFERS), generic plan (plan_cache_mode = force_generic_plan)', true);
      print('## Time for one claim of 100');
      print();
      await timing(client, org);
      if (process.env.SKIP_BACKOFF !== '1') await backoffScenario(db, client, org);
    } finally {
      client.release();
    }
  } finally {
    await db.end();
  }
}

async function main(): Promise<void> {
  const scratch = await timed(process.env.DATABASE_URL ? 'connect to DATABASE_URL' : 'start embedded PostgreSQL', () => startScratchPostgres({ prefix: 'spool-claim-explain-', log, warn: log }));
  try {
    const url = await scratch.createDatabase(`spool_claim_explain_${randomBytes(3).toString('hex')}`);
    print('# Claim on 1,000,000 pending + 1,000,000 finished jobs');
    print();
    print(`Command: \`${scratch.embedded ? '' : 'DATABASE_URL=… '}node --import tsx bench/claim-explain.ts\` (${scratch.embedded ? 'embedded PostgreSQL, default durable settings' : 'DATABASE_URL server'}).`);
    print();
    await measure(url);
  } finally {
    await scratch.stop();
  }
  console.log(out.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
