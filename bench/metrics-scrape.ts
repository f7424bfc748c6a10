/**
 * `npm run bench:metrics [-- --rows N]`: shows that a /metrics scrape stays
 * fast with 10,000,000 rows in spool.jobs. Loads the rows with INSERT ...
 * SELECT generate_series (indexes dropped during the load and rebuilt from
 * their migration definitions, which is much faster than maintaining them
 * row by row), then starts Spool over that database and times scrapes and
 * the aggregate refresh. Writes bench/results/metrics-scrape.json and prints
 * a Markdown summary for docs/metrics.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { pino } from 'pino';
import { createPool, migrate, metricsQueueGauges, organizationCreate } from '@spool/engine';
import { loadConfig, startSpool } from '@spool/server';
import { loadJobsAsIs } from '../test-support/job-fixtures.js';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';
import { percentile } from './lib/stats.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const ROWS = arg('rows', 10_000_000);
const QUEUES = 20;
// Unfinished share: what a busy but healthy system carries; the rest is finished history.
const PENDING = Math.round(ROWS * 0.01);
const SCHEDULED = Math.round(ROWS * 0.005);
const PROCESSING = 2_000;
const DEADLETTER = Math.round(ROWS * 0.002);

async function load(url: string): Promise<{ organizationId: string; loadMs: number }> {
  const db = createPool({ connectionString: url, max: 2 });
  await migrate(db);
  const org = await organizationCreate(db, { name: 'bench', slug: 'bench-metrics', planTier: 'enterprise', environment: 'development' });
  const organizationId = org.organization.id;
  const started = Date.now();
  const indexes = await db.query<{ indexname: string; indexdef: string }>(
    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'spool' AND tablename = 'jobs' AND indexname <> 'jobs_pkey'",
  );
  for (const { indexname } of indexes.rows) await db.query(`DROP INDEX spool.${indexname}`);
  const finished = ROWS - PENDING - SCHEDULED - PROCESSING - DEADLETTER;
  // Rows in every status loaded as they are, not walked through the operations (job-fixtures.ts).
  const insert = (count: number, status: string, extra: string) => loadJobsAsIs(db, (c) => c.query(`
    INSERT INTO spool.jobs (organization_id, queue_name, status, payload, created_at, scheduled_at, started_at, completed_at,
                            assigned_worker_id, lease_id, lease_expires_at)
    SELECT $1, 'queue-' || (g % ${QUEUES}), '${status}', '{}'::jsonb, now() - (g % 86400) * interval '1 second', ${extra}
    FROM generate_series(1, ${count}) g`, [organizationId]));
  console.error(`loading ${ROWS.toLocaleString()} rows...`);
  await insert(finished, 'completed', "NULL, now() - interval '1 hour', now() - interval '59 minutes', NULL, NULL, NULL");
  await insert(PENDING, 'pending', 'NULL, NULL, NULL, NULL, NULL, NULL');
  await insert(SCHEDULED, 'scheduled', "now() + interval '1 day', NULL, NULL, NULL, NULL, NULL");
  await insert(PROCESSING, 'processing', "NULL, now(), NULL, 'w1', gen_random_uuid(), now() + interval '1 hour'");
  await insert(DEADLETTER, 'deadletter', "NULL, now() - interval '1 hour', now() - interval '59 minutes', NULL, NULL, NULL");
  await db.query(`INSERT INTO spool.dead_letter_queue (organization_id, job_id, queue_name, payload, error, retry_count)
                  SELECT organization_id, id, queue_name, payload, 'boom', 3 FROM spool.jobs WHERE status = 'deadletter'`);
  console.error(`rebuilding ${indexes.rows.length} indexes...`);
  await db.query("SET maintenance_work_mem = '1GB'");
  for (const { indexdef } of indexes.rows) await db.query(indexdef);
  await db.query('VACUUM (ANALYZE) spool.jobs');
  await db.query('VACUUM (ANALYZE) spool.dead_letter_queue');
  const loadMs = Date.now() - started;
  await db.end();
  return { organizationId, loadMs };
}

async function main(): Promise<void> {
  const scratch = await startScratchPostgres({ prefix: 'spool-bench-metrics-', embeddedOnly: true, settings: { max_wal_size: '8GB', checkpoint_timeout: '30min', shared_buffers: '1GB' } });
  try {
    const url = await scratch.createDatabase('spool');
    const { loadMs } = await load(url);
    const db = createPool({ connectionString: url, max: 1 });
    const plan = await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) ${(await import('node:fs')).readFileSync(new URL('../packages/engine/src/ops/metrics-queue-gauges.sql', import.meta.url), 'utf8')}`);
    const refreshTimes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      await metricsQueueGauges(db);
      refreshTimes.push(performance.now() - t);
    }
    const size = await db.query<{ rows: number; bytes: string }>("SELECT count(*)::bigint AS rows, pg_size_pretty(pg_total_relation_size('spool.jobs')) AS bytes FROM spool.jobs");
    await db.end();

    const spool = await startSpool({ ...loadConfig({}), databaseUrl: url, host: '127.0.0.1', port: 0, metricsRefreshMs: 5_000, metricsToken: 'bench-metrics' }, { logger: pino({ level: 'silent' }) });
    const scrapeTimes: number[] = [];
    let bytes = 0;
    try {
      const first = performance.now();
      await (await fetch(`${spool.url}/metrics`, { headers: { authorization: 'Bearer bench-metrics' } })).text();
      const firstMs = performance.now() - first;
      for (let i = 0; i < 200; i++) {
        const t = performance.now();
        const body = await (await fetch(`${spool.url}/metrics`, { headers: { authorization: 'Bearer bench-metrics' } })).text();
        scrapeTimes.push(performance.now() - t);
        bytes = body.length;
        if (i % 20 === 0) await new Promise((r) => setTimeout(r, 250)); // let background refreshes overlap some scrapes
      }
      const result = {
        rows: size.rows[0]!.rows,
        table_size: size.rows[0]!.bytes,
        unfinished: { pending: PENDING, scheduled: SCHEDULED, processing: PROCESSING, deadletter: DEADLETTER },
        load_s: loadMs / 1000,
        first_scrape_ms: firstMs,
        scrape_ms: { p50: percentile(scrapeTimes, 50), p95: percentile(scrapeTimes, 95), max: Math.max(...scrapeTimes), n: scrapeTimes.length },
        refresh_ms: { p50: percentile(refreshTimes, 50), max: Math.max(...refreshTimes), n: refreshTimes.length },
        body_bytes: bytes,
        // Other work on the machine shows up in the tail latencies.
        load_average: loadavg().map((l) => Number(l.toFixed(2))),
      };
      mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
      writeFileSync(new URL('./results/metrics-scrape.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
      console.log(JSON.stringify(result, null, 2));
      console.log('\nEXPLAIN (ANALYZE, BUFFERS) of the aggregate query:\n' + plan.rows.map((r) => r['QUERY PLAN']).join('\n'));
    } finally {
      await spool.stop();
    }
  } finally {
    await scratch.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
