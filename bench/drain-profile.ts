/**
 * Where the CPU of a Spool drain goes (`node --import tsx bench/drain-profile.ts [jobs]`):
 * PostgreSQL backends, the server process, the worker process and this harness,
 * as CPU seconds per 1,000 jobs, from /proc before and after one drain.
 * On two shared cores this split, not wall time, says which side to make cheaper.
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

const scratch = await startScratchPostgres({ prefix: 'spool-drain-profile-', embeddedOnly: true });
const databaseUrl = await scratch.createDatabase('bench_spool');
const sys = new SpoolSystem(databaseUrl);
const drains = scenario === 'drain' || scenario === 'held';
try {
  await sys.setup();
  // SETUP_SQL: statements to try on the schema first (an index, a constraint), for A/B runs.
  if (process.env.SETUP_SQL) await sys.db.query(process.env.SETUP_SQL);
  for (let rep = 0; rep < 2; rep++) {
    await sys.reset();
    if (drains) await sys.preload(jobs, 1000, preloadVia);
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
  }
} finally {
  await sys.teardown();
  await scratch.stop();
}
