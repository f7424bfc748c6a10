/**
 * The database's share of a drain, without HTTP (`node --import tsx bench/sql-drain.ts [jobs] [repeats]`):
 * bulk-loads jobs through the engine, then claims 100 and completes them in
 * one batch, over one connection, until the queue is empty, exactly as the
 * server does for a worker. Reports the backend's CPU time per job (from
 * /proc), and per statement its execution time, buffer hits and WAL
 * (pg_stat_statements). The server and the workers are out of the picture,
 * so a change to the claim or complete SQL shows here undiluted. The bulk
 * load's backend CPU per job is reported too (1,000 jobs per insert).
 * SQL_DRAIN_MODE=keyed gives every job its own concurrency_key under a
 * concurrency_key_limit of 1 (the capped claim, F2 in bench/flow.ts);
 * SQL_DRAIN_MODE=fair spreads the jobs over 100 fairness keys of a
 * round-robin queue (F3). The connection plans as the server's do
 * (force_generic_plan); SQL_DRAIN_PLAN_CACHE_MODE=auto shows PostgreSQL's
 * default instead, under which later rounds replan the claim on every call.
 */
import { jobClaim, jobCompleteMany, jobInsertMany, migrate, organizationCreate, createPool, queueConfigUpsert, type PlanCacheMode } from '@spool/engine';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';
import { processCpuSeconds } from './lib/proc-cpu.js';

const jobs = Number(process.argv[2] ?? 50_000);
const repeats = Number(process.argv[3] ?? 3);
const BATCH = 100;
const mode = process.env.SQL_DRAIN_MODE ?? 'plain';
if (!['plain', 'keyed', 'fair'].includes(mode)) throw new Error(`SQL_DRAIN_MODE: plain, keyed or fair, not ${mode}`);
const scratch = await startScratchPostgres({
  prefix: 'spool-sql-drain-',
  embeddedOnly: true,
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'top' },
});
try {
  const url = await scratch.createDatabase('sql_drain');
  // createPool refuses a mode PostgreSQL does not have.
  const planCacheMode = (process.env.SQL_DRAIN_PLAN_CACHE_MODE ?? 'force_generic_plan') as PlanCacheMode;
  const db = createPool({ connectionString: url, max: 1, planCacheMode });
  await migrate(db);
  await db.query('CREATE EXTENSION pg_stat_statements');
  // SQL_DRAIN_SETUP: statements to try on the schema (an index, a setting) before the rounds.
  if (process.env.SQL_DRAIN_SETUP) await db.query(process.env.SQL_DRAIN_SETUP);
  const { organization } = await organizationCreate(db, { name: 'bench', slug: 'bench', planTier: 'unlimited', environment: 'development' });
  if (mode !== 'plain') await queueConfigUpsert(db, organization.id, 'bench', mode === 'keyed' ? { concurrencyKeyLimit: 1 } : { fairness: 'round_robin' });
  const pid = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  for (let round = 1; round <= repeats; round++) {
    const loadCpu0 = processCpuSeconds(pid);
    for (let offset = 0; offset < jobs; offset += 1000) {
      const n = Math.min(1000, jobs - offset);
      await jobInsertMany(db, Array.from({ length: n }, (_, k) => ({ organizationId: organization.id, queueName: 'bench', payload: { i: offset + k },
        concurrencyKey: mode === 'keyed' ? `key-${round}-${offset + k}` : null, fairnessKey: mode === 'fair' ? `tenant-${(offset + k) % 100}` : null })));
    }
    const loadCpu = processCpuSeconds(pid) - loadCpu0;
    await db.query('VACUUM ANALYZE spool.jobs');
    await db.query('CHECKPOINT');
    await db.query('SELECT pg_stat_statements_reset()');
    const cpu0 = processCpuSeconds(pid);
    const t0 = performance.now();
    let done = 0;
    for (;;) {
      const claimed = await jobClaim(db, { organizationId: organization.id, queueName: 'bench', workerId: 'w1', limit: BATCH, leaseSeconds: 300 });
      if (claimed.length === 0) break;
      const outcomes = await jobCompleteMany(db, organization.id, claimed.map((j) => ({ id: j.id, workerId: 'w1', leaseId: j.lease_id, result: null })));
      if (outcomes.some((o) => !o.ok)) throw new Error('a completion was refused');
      done += claimed.length;
    }
    const wall = (performance.now() - t0) / 1000;
    const cpu = processCpuSeconds(pid) - cpu0;
    if (done !== jobs) throw new Error(`drained ${done} of ${jobs}`);
    const stats = await db.query<{ query: string; calls: number; ms: number; hit: number; wal: number }>(`
      SELECT query, calls, total_exec_time AS ms, shared_blks_hit AS hit, wal_bytes AS wal
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC`);
    console.log(`round ${round} (${mode}): ${jobs} jobs, ${(jobs / wall).toFixed(0)} jobs/s over one connection; backend CPU ${((cpu / jobs) * 1e6).toFixed(1)} µs/job (the bulk load before it: ${((loadCpu / jobs) * 1e6).toFixed(1)} µs/job)`);
    const plans = await db.query<{ name: string; generic_plans: number; custom_plans: number }>('SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name');
    console.log('  plans: ' + plans.rows.map((p) => `${p.name} generic ${p.generic_plans} custom ${p.custom_plans}`).join('; '));
    for (const s of stats.rows.slice(0, 4)) {
      const name = s.query.replace(/\s+/g, ' ').slice(0, 60);
      console.log(`  ${((s.ms / jobs) * 1000).toFixed(1).padStart(6)} µs/job exec  ${(Number(s.hit) / jobs).toFixed(1).padStart(5)} hits/job  ${(Number(s.wal) / jobs).toFixed(0).padStart(5)} WAL B/job  ${String(s.calls).padStart(5)} calls  ${name}`);
    }
  }
  await db.end();
} finally {
  await scratch.stop();
}
