/**
 * Where the CPU of a Spool drain goes (`node --import tsx bench/drain-profile.ts [jobs]`):
 * PostgreSQL backends, the server process, the worker process and this harness,
 * as CPU seconds per 1,000 jobs, from /proc before and after one drain.
 * On two shared cores this split, not wall time, says which side to make cheaper.
 * STATEMENTS=1 adds the costliest statements of each repetition (below).
 */
import { startScratchPostgres } from '../test-support/scratch-postgres.js';
import { holdXmin } from './lib/hold-xmin.js';
import { CPU_ROLES, cpuDuring } from './lib/role-cpu.js';
import { SpoolSystem } from './systems/spool.js';

const jobs = Number(process.argv[2] ?? 50_000);
// PRELOAD=engine inserts through the engine instead of the HTTP API, so a
// server profile (SERVER_NODE_ARGS=--cpu-prof) holds the drain alone.
const preloadVia = process.env.PRELOAD === 'engine' ? 'engine' : 'api';
// SCENARIO=enqueue measures S1 instead (single enqueues from 8 concurrent
// callers), SCENARIO=bulk S2 (bulk enqueues in batches of 1,000), SCENARIO=held
// S7 (the drain while another session keeps a transaction open).
const scenario = ['enqueue', 'bulk', 'held'].includes(process.env.SCENARIO ?? '') ? process.env.SCENARIO! : 'drain';
// STATEMENTS=1 also prints each repetition's costliest statements from
// pg_stat_statements (planning included: how often each was planned, and
// what that cost per job), e.g. with DATABASE_PLAN_CACHE_MODE=auto, which
// the server inherits, to see its claim replanned.
const statements = process.env.STATEMENTS === '1';

const scratch = await startScratchPostgres({
  prefix: 'spool-drain-profile-',
  embeddedOnly: true,
  ...(statements ? { settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.track_planning': 'on' } } : {}),
});
const databaseUrl = await scratch.createDatabase('bench_spool');
const sys = new SpoolSystem(databaseUrl);
const drains = scenario === 'drain' || scenario === 'held';
try {
  await sys.setup();
  // SETUP_SQL: statements to try on the schema first (an index, a constraint), for A/B runs.
  if (process.env.SETUP_SQL) await sys.db.query(process.env.SETUP_SQL);
  if (statements) await sys.db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  for (let rep = 0; rep < 2; rep++) {
    await sys.reset();
    if (drains) await sys.preload(jobs, 1000, preloadVia);
    if (statements) await sys.db.query('SELECT pg_stat_statements_reset()');
    const holder = scenario === 'held' ? await holdXmin(databaseUrl) : null;
    const started = performance.now();
    const { result: rate, cpu: used } = await cpuDuring(() => (drains ? sys.drain(jobs, 1) : scenario === 'bulk' ? sys.enqueueBulk(jobs, 1000) : sys.enqueueSingle(jobs, 8)));
    await holder?.end();
    const wall = (performance.now() - started) / 1000;
    const parts = CPU_ROLES.map((role) => {
      const cpu = used.get(role) ?? 0;
      return `${role} ${(cpu / (jobs / 1000)).toFixed(3)} s (${((cpu / wall) * 100).toFixed(0)}%)`;
    });
    console.log(`${scenario} ${jobs} jobs: ${Math.round(rate)} jobs/s, wall ${wall.toFixed(1)} s; CPU per 1,000 jobs: ${parts.join(', ')}`);
    if (statements) await printStatements(sys, jobs);
  }
} finally {
  await sys.teardown();
  await scratch.stop();
}

/** The repetition's eight costliest statements of the bench database, per job (times are wall time inside PostgreSQL). */
async function printStatements(system: SpoolSystem, perJobs: number): Promise<void> {
  const { rows } = await system.db.query<{ calls: number; plans: number; exec_ms: number; plan_ms: number; query: string }>(
    `SELECT calls::int, plans::int, total_exec_time AS exec_ms, total_plan_time AS plan_ms, regexp_replace(left(query, 70), '\\s+', ' ', 'g') AS query
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
     ORDER BY total_exec_time + total_plan_time DESC LIMIT 8`);
  for (const r of rows) {
    const us = (ms: number) => ((ms * 1000) / perJobs).toFixed(1).padStart(6);
    console.log(`  ${us(r.exec_ms)} µs exec ${us(r.plan_ms)} µs planning per job; ${String(r.calls).padStart(6)} calls, ${String(r.plans).padStart(5)} plans  ${r.query}`);
  }
}
