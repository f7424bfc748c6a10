/**
 * `npm run bench [-- --quick] [-- --reps N] [-- --systems spool,pg-boss] [-- --scenarios S3,S8,S9]`:
 * starts its own embedded PostgreSQL (default durability), runs docs/design.md §7's
 * scenarios S1–S9 for Spool, graphile-worker, pg-boss and plain SQL, and
 * writes bench/results/latest.json, bench/results/s9-series.json (when S9 ran)
 * and BENCHMARKS.md. `--scenarios` takes scenario ids (S3 stands for S3-1w
 * and S3-2w). S9's phases and rate come from the environment (bench/NOTES.md).
 * With `--cost` it measures per-job database cost instead (bench/cost.ts),
 * with `--flow` what flow control holds and costs (bench/flow.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os';
import pg from 'pg';
import { loadJobsAsIs } from '../test-support/job-fixtures.js';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';
import { holdXmin } from './lib/hold-xmin.js';
import { renderReport } from './lib/report.js';
import { Results, type Metric } from './lib/results.js';
import { runSteady, steadyPlan, type SteadyOutcome } from './lib/steady.js';
import { GraphileSystem } from './systems/graphile.js';
import { PgBossSystem } from './systems/pgboss.js';
import { PlainSqlSystem } from './systems/plain.js';
import { NotAvailable, SpoolSystem } from './systems/spool.js';
import { isQueueSystem, type BenchSystem, type QueueSystem, type Sizes } from './systems/system.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const flag = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const reps = Number(flag('reps') ?? 3);
const only = flag('systems')?.split(',');
const scenarios = flag('scenarios')?.split(',').map((x) => x.trim().toUpperCase()).filter(Boolean);
/** Whether `--scenarios` selects `id` (S3 selects S3-1w and S3-2w). */
const wanted = (id: string) => !scenarios || scenarios.some((x) => id.toUpperCase() === x || id.toUpperCase().startsWith(`${x}-`));
// --profile: load pg_stat_statements and write each database's costliest statements to bench/results/profile.md.
const profile = argv.includes('--profile');

const SIZES: Sizes = quick
  ? { singleJobs: 300, singleCallers: 8, bulkJobs: 5_000, bulkBatch: 1000, drainJobs: 5_000, latencyRate: 200, latencySeconds: 1, retainedFinished: 20_000, scheduledJobs: 20_000 }
  : { singleJobs: 8_000, singleCallers: 8, bulkJobs: 100_000, bulkBatch: 1000, drainJobs: 100_000, latencyRate: 200, latencySeconds: 15, retainedFinished: 1_000_000, scheduledJobs: 1_000_000 };
/** S8: the future jobs are due an hour from now or later, so none comes due during the run. */
const SCHEDULED_AHEAD_S = 3600;
const STEADY = steadyPlan(quick);
/** S8 and S9 run for these (spool-grpc is a transport variant of spool; plain SQL has no scheduling or workers). */
const QUEUE_SYSTEMS = ['spool', 'graphile-worker', 'pg-boss'];

const PG_SETTINGS = ['server_version', 'fsync', 'synchronous_commit', 'full_page_writes', 'wal_level', 'shared_buffers', 'work_mem', 'maintenance_work_mem',
  'effective_cache_size', 'max_wal_size', 'checkpoint_timeout', 'max_connections', 'autovacuum', 'jit', 'random_page_cost'];

const results = new Results();
const notes: string[] = [];
const steadyRuns: (SteadyOutcome & { system: string; rep: number })[] = [];

/** The rows S9 writes (a failed run notes each of them). */
const S9_ROWS: [string, Metric][] = [
  ...(['clean', 'held', 'recovery'] as const).flatMap((p) => (['offered_per_s', 'completion_ratio', 'backlog_growth', 'backlog_slope', 'p50_ms', 'p99_ms', 'enqueue_p99_ms'] as const).map((m): [string, Metric] => [`S9-${p}`, m])),
  ['S9', 'p99_ratio'], ['S9', 'recovery_s'], ['S9', 'recovered'],
];

async function measure(system: string, scenario: string, fn: () => Promise<void>): Promise<void> {
  if (!wanted(scenario)) return;
  const started = Date.now();
  try {
    await fn();
    console.error(`  ${system} ${scenario}: ok (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } catch (err) {
    const reason = err instanceof NotAvailable ? err.message : `failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;
    if (!(err instanceof NotAvailable)) console.error(err);
    console.error(`  ${system} ${scenario}: ${reason}`);
    if (scenario === 'S9') {
      for (const [sc, m] of S9_ROWS) results.note(system, sc, m, reason);
      return;
    }
    const metrics = scenario === 'S4' ? (['p50_ms', 'p95_ms', 'p99_ms', 'max_ms'] as const) : (['jobs_per_s'] as const);
    for (const m of metrics) results.note(system, scenario, m, reason);
  }
}

async function runSystem(sys: BenchSystem): Promise<void> {
  const name = sys.name;
  const jobsPerS = (scenario: string, v: number) => results.add(name, scenario, 'jobs_per_s', v);
  await measure(name, 'S1', async () => {
    await sys.reset();
    jobsPerS('S1', await sys.enqueueSingle(SIZES.singleJobs, SIZES.singleCallers));
  });
  if (sys instanceof PlainSqlSystem) {
    await measure(name, 'S2', async () => {
      await sys.reset();
      jobsPerS('S2', await sys.enqueueBulk(SIZES.bulkJobs, SIZES.bulkBatch));
    });
    await measure(name, 'S5', async () => {
      await sys.reset();
      await sys.preload(SIZES.drainJobs, SIZES.bulkBatch);
      jobsPerS('S5', await sys.drain(SIZES.drainJobs, 4));
    });
    return;
  }
  await measure(name, 'S2', async () => {
    await sys.reset();
    jobsPerS('S2', await sys.enqueueBulk(SIZES.bulkJobs, SIZES.bulkBatch));
  });
  for (const workers of [1, 2]) {
    await measure(name, `S3-${workers}w`, async () => {
      await sys.reset();
      await sys.preload(SIZES.drainJobs, SIZES.bulkBatch);
      jobsPerS(`S3-${workers}w`, await sys.drain(SIZES.drainJobs, workers));
    });
  }
  await measure(name, 'S4', async () => {
    await sys.reset();
    results.addLatency(name, 'S4', await sys.latency(SIZES.latencyRate, SIZES.latencySeconds));
  });
  if (isQueueSystem(sys) && QUEUE_SYSTEMS.includes(name)) await runQueueScenarios(sys);
  if (sys instanceof SpoolSystem && sys.name === 'spool') await runSpoolOnly(sys);
}

/** S8 (scheduled jobs waiting) and S9 (steady rate under a held transaction), for Spool and both peers. */
async function runQueueScenarios(sys: QueueSystem): Promise<void> {
  const name = sys.name;
  await measure(name, 'S8', async () => {
    await sys.reset();
    await sys.preloadScheduled(SIZES.scheduledJobs, SIZES.bulkBatch, SCHEDULED_AHEAD_S);
    await sys.preload(SIZES.drainJobs, SIZES.bulkBatch);
    results.add(name, 'S8', 'jobs_per_s', await sys.drain(SIZES.drainJobs, 1));
  });
  await measure(name, 'S9', async () => {
    await sys.reset();
    const o = await runSteady(sys, STEADY, (line) => console.error(`    ${name} S9 ${line}`));
    for (const p of o.phases) {
      const sc = `S9-${p.phase}`;
      results.add(name, sc, 'offered_per_s', p.offeredPerS);
      results.add(name, sc, 'completion_ratio', p.completionRatio);
      results.add(name, sc, 'backlog_growth', p.backlogEnd - p.backlogStart);
      results.add(name, sc, 'backlog_slope', p.backlogSlope);
      results.add(name, sc, 'p50_ms', p.p50Ms);
      results.add(name, sc, 'p99_ms', p.p99Ms);
      results.add(name, sc, 'enqueue_p99_ms', p.enqueueP99Ms);
      console.error(`    ${name} S9 ${p.phase}: offered ${p.offeredPerS.toFixed(0)}/s, completed ${(p.completionRatio * 100).toFixed(1)}%, backlog ${p.backlogStart} → ${p.backlogEnd} (max ${p.backlogMax}, slope ${p.backlogSlope.toFixed(2)}/s), pickup p50 ${p.p50Ms.toFixed(1)} ms, p99 ${p.p99Ms.toFixed(1)} ms (of which enqueue call p50 ${p.enqueueP50Ms.toFixed(1)}, p99 ${p.enqueueP99Ms.toFixed(1)} ms)`);
    }
    const [clean, held] = o.phases;
    results.add(name, 'S9', 'p99_ratio', held!.p99Ms / clean!.p99Ms);
    // Not recovered within the recovery phase: the phase's length stands in, and `recovered` says so.
    results.add(name, 'S9', 'recovery_s', o.recoveryS ?? STEADY.recoveryS);
    results.add(name, 'S9', 'recovered', o.recoveryS == null ? 0 : 1);
    console.error(`    ${name} S9: held transaction ${o.heldFromS.toFixed(1)}–${o.heldToS.toFixed(1)} s; p99 back within ${STEADY.recoveredWithin}× clean ${o.recoveryS == null ? `not within ${STEADY.recoveryS} s` : `after ${o.recoveryS.toFixed(1)} s`}${o.unstarted ? `; ${o.unstarted} jobs never started` : ''}`);
    steadyRuns.push({ system: name, rep: results.rep, ...o });
  });
}

/** S6 and S7 compare Spool with itself (docs/design.md §7), so they run for Spool only. */
async function runSpoolOnly(sys: SpoolSystem): Promise<void> {
  const name = sys.name;
  const jobsPerS = (scenario: string, v: number) => results.add(name, scenario, 'jobs_per_s', v);
  await measure(name, 'S6', async () => {
    await sys.reset();
    await retainFinished(sys, SIZES.retainedFinished);
    await sys.preload(SIZES.drainJobs, SIZES.bulkBatch);
    jobsPerS('S6', await sys.drain(SIZES.drainJobs, 1));
  });
  await measure(name, 'S7', async () => {
    await sys.reset();
    await sys.preload(SIZES.drainJobs, SIZES.bulkBatch);
    const holder = await holdXmin(spoolUrl);
    try {
      jobsPerS('S7', await sys.drain(SIZES.drainJobs, 1));
    } finally {
      await holder.end();
    }
  });
}

/** S6 fixture: finished jobs (with their history) in the same queue, loaded in one statement, as they are (job-fixtures.ts). */
async function retainFinished(sys: SpoolSystem, rows: number): Promise<void> {
  // Straight into the partition of the day their window ends (made first, so none lands in the default partition).
  const purgeOn = `spool.job_purge_on($1, 'bench', 'completed', now() - interval '1 hour')`;
  await sys.db.query(`SELECT spool.jobs_done_partition_ensure(${purgeOn})`, [sys.organizationId]);
  await loadJobsAsIs(sys.db, (c) => c.query(`
    WITH j AS (
      INSERT INTO spool.jobs (organization_id, queue_name, status, phase, purge_on, payload, created_at, started_at, completed_at)
      SELECT $1, 'bench', 'completed', 'done', (SELECT ${purgeOn}), jsonb_build_object('i', g), now() - interval '2 hours', now() - interval '1 hour', now() - interval '1 hour'
      FROM generate_series(1, $2::int) g
      RETURNING id, organization_id, queue_name
    )
    INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status)
    SELECT organization_id, id, queue_name, 'complete', 'processing', 'completed' FROM j`, [sys.organizationId, rows]));
  await sys.db.query('VACUUM (ANALYZE) spool.jobs');
}

let spoolUrl = '';
let loadAtStart = '';

async function main(): Promise<void> {
  const startedAt = new Date();
  loadAtStart = loadavg().map((l) => l.toFixed(2)).join(' ');
  const scratch = await startScratchPostgres({ prefix: 'spool-bench-pg-', embeddedOnly: true, settings: profile ? { shared_preload_libraries: 'pg_stat_statements' } : {} });
  console.error(`[bench] ${quick ? 'quick' : 'full'} run, ${reps} repetitions; PostgreSQL in ${scratch.dir}`);
  const { admin, urlFor } = scratch;
  for (const db of ['bench_spool', 'bench_spool_grpc', 'bench_graphile', 'bench_pgboss', 'bench_plain']) await scratch.createDatabase(db);
  spoolUrl = urlFor('bench_spool');
  if (profile) {
    for (const db of ['postgres', 'bench_spool', 'bench_spool_grpc', 'bench_graphile', 'bench_pgboss', 'bench_plain']) {
      const c = new pg.Client({ connectionString: urlFor(db) });
      await c.connect();
      await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await c.end();
    }
  }
  const all: BenchSystem[] = [new SpoolSystem(spoolUrl), new SpoolSystem(urlFor('bench_spool_grpc'), 'grpc'), new GraphileSystem(urlFor('bench_graphile')), new PgBossSystem(urlFor('bench_pgboss')), new PlainSqlSystem(urlFor('bench_plain'))];
  const systems = all.filter((s) => !only || only.includes(s.name));
  const versions: Record<string, string> = { node: process.version };
  const configurations: Record<string, string> = {};
  const ready: BenchSystem[] = [];
  try {
    for (const sys of systems) {
      versions[sys.name] = await sys.version();
      configurations[sys.name] = sys.configuration;
      try {
        await sys.setup();
        ready.push(sys);
      } catch (err) {
        console.error(`[bench] ${sys.name} setup failed`, err);
        notes.push(`- ${sys.name} could not be set up on ${process.version}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    for (let rep = 1; rep <= reps; rep++) {
      results.rep = rep;
      for (const sys of ready) {
        console.error(`[bench] repetition ${rep}/${reps}: ${sys.name}`);
        await runSystem(sys);
      }
    }
    const settings = await admin.query<{ name: string; setting: string; unit: string | null }>('SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1) ORDER BY name', [PG_SETTINGS]);
    const pgSettings = settings.rows.map((s) => ({ name: s.name, setting: s.unit ? `${s.setting} (${s.unit})` : s.setting }));
    versions.postgresql = (await admin.query('SELECT version() AS v')).rows[0].v;
    if (profile) await writeProfile(admin);
    const spool = ready.find((s): s is SpoolSystem => s instanceof SpoolSystem && s.name === 'spool');
    if (spool?.bulkSplit) notes.push('- Spool refused 1,000 jobs per /jobs/bulk request, so S2 sent each batch of 1,000 as 10 concurrent requests of 100.');
    const rows = results.rows();
    const resultsDir = new URL('./results/', import.meta.url);
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(new URL('latest.json', resultsDir), JSON.stringify(rows, null, 2) + '\n');
    if (steadyRuns.length) writeFileSync(new URL('s9-series.json', resultsDir), JSON.stringify(steadyRuns, null, 1) + '\n');
    const report = renderReport(rows, {
      command: `npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`,
      quick,
      reps,
      startedAt,
      durationS: (Date.now() - startedAt.getTime()) / 1000,
      sizes: { ...SIZES },
      steady: STEADY,
      versions,
      machine: machine(),
      pgSettings,
      configurations,
      notes,
    });
    writeFileSync(new URL('../BENCHMARKS.md', import.meta.url), report + '\n');
    console.error(`[bench] wrote bench/results/latest.json${steadyRuns.length ? ', bench/results/s9-series.json' : ''} and BENCHMARKS.md in ${Math.round((Date.now() - startedAt.getTime()) / 1000)} s`);
  } finally {
    for (const sys of ready) await sys.teardown().catch((err) => console.error(`[bench] ${sys.name} teardown`, err));
    await scratch.stop();
  }
}

/** The 12 costliest statements per database, by total execution time. */
async function writeProfile(admin: pg.Client): Promise<void> {
  const r = await admin.query<{ datname: string; calls: number; total_ms: number; mean_ms: number; rows: number; query: string }>(`
    SELECT d.datname, s.calls, round(s.total_exec_time::numeric, 1)::float8 AS total_ms, round(s.mean_exec_time::numeric, 3)::float8 AS mean_ms, s.rows,
           regexp_replace(left(s.query, 160), '\\s+', ' ', 'g') AS query
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
    WHERE d.datname LIKE 'bench_%'
    ORDER BY d.datname, s.total_exec_time DESC`);
  const out = ['# pg_stat_statements after `npm run bench ' + argv.join(' ') + '`', ''];
  for (const db of [...new Set(r.rows.map((x) => x.datname))]) {
    out.push(`## ${db}`, '', '| calls | total ms | mean ms | rows | statement |', '| --- | --- | --- | --- | --- |');
    for (const x of r.rows.filter((y) => y.datname === db).slice(0, 12)) out.push(`| ${x.calls} | ${x.total_ms} | ${x.mean_ms} | ${x.rows} | \`${x.query.replace(/\|/g, '\\|')}\` |`);
    out.push('');
  }
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/profile.md', import.meta.url), out.join('\n'));
}

function machine(): Record<string, string> {
  const cpu = cpus();
  let disk = '';
  try {
    disk = execFileSync('df', ['-h', tmpdir()], { encoding: 'utf8' }).split('\n')[1] ?? '';
  } catch {
    // df is informational only
  }
  return {
    cpu: `${cpu.length} × ${cpu[0]?.model ?? 'unknown'}`,
    memory: `${Math.round(totalmem() / 2 ** 30)} GiB`,
    os: `${platform()} ${release()}`,
    'temp filesystem': disk.replace(/\s+/g, ' '),
    // Other work on the machine skews every number; the load average says how much there was.
    'load average (1/5/15 min) at start': loadAtStart,
    'load average at end': loadavg().map((l) => l.toFixed(2)).join(' '),
  };
}

// --cost: per-job database cost instead of throughput (bench/cost.ts); --flow: flow control (bench/flow.ts).
(argv.includes('--cost') ? import('./cost.js').then((m) => m.runCost())
  : argv.includes('--flow') ? import('./flow.js').then((m) => m.runFlow())
  : main()).then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
