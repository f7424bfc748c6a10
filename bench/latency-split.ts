/**
 * Where S4's enqueue-to-start latency goes (`node --import tsx bench/latency-split.ts [seconds] [rate]`):
 * the S4 run (one SDK worker process, concurrency 20, maxBatch 10,
 * wait_ms 5000; single enqueues at `rate` jobs/s, 200 by default, for
 * `seconds`, 5 by default), three repetitions, each split at the job's own
 * timestamps:
 *  - enqueue: the harness's call until the insert's transaction began (created_at);
 *  - claim: from there until the claim's transaction began (started_at),
 *    which holds the enqueue's commit, the NOTIFY and the woken long poll;
 *  - the rest (total minus both): the claim's statement and commit, its
 *    HTTP answer and the worker until the handler starts.
 * Then the last repetition's statements per job from pg_stat_statements:
 * calls, execution and planning. At a low rate the latency is mostly the
 * CPU that each job's statements take on two shared cores, so this is the
 * list to make shorter.
 */
import { startScratchPostgres } from '../test-support/scratch-postgres.js';
import { SpoolSystem } from './systems/spool.js';

const seconds = Number(process.argv[2] ?? 5);
const rate = Number(process.argv[3] ?? 200);
const scratch = await startScratchPostgres({
  prefix: 'spool-latency-split-',
  embeddedOnly: true,
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.track_planning': 'on' },
});
const sys = new SpoolSystem(await scratch.createDatabase('bench_spool'));

function percentile(values: number[], p: number): string {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(1);
}
const spread = (values: number[]) => `p50 ${percentile(values, 0.5)} p90 ${percentile(values, 0.9)}`;

try {
  await sys.setup();
  await sys.db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  for (let rep = 1; rep <= 3; rep++) {
    await sys.reset();
    await sys.db.query('SELECT pg_stat_statements_reset()');
    const latencies = await sys.latency(rate, seconds);
    const { rows } = await sys.db.query<{ t: number; created: number; started: number }>(`
      SELECT (payload->>'t')::float8 AS t, extract(epoch FROM created_at) * 1000 AS created, extract(epoch FROM started_at) * 1000 AS started
      FROM spool.jobs`);
    const enqueue = rows.map((r) => r.created - r.t);
    const claim = rows.map((r) => r.started - r.created);
    console.log(`repetition ${rep}: ${latencies.length} jobs at ${rate}/s; total ${spread(latencies)} ms | enqueue ${spread(enqueue)} | claim ${spread(claim)}`);
    if (rep < 3) continue;
    const statements = await sys.db.query<{ calls: string; exec: number; plan: number; query: string }>(`
      SELECT calls, total_exec_time AS exec, total_plan_time AS plan, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS query
      FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'
      ORDER BY total_exec_time + total_plan_time DESC LIMIT 12`);
    const jobs = latencies.length;
    for (const s of statements.rows) {
      console.log(`  ${(Number(s.calls) / jobs).toFixed(2).padStart(5)} calls/job ${((s.exec * 1000) / jobs).toFixed(0).padStart(5)} µs exec/job ${((s.plan * 1000) / jobs).toFixed(0).padStart(4)} µs plan/job  ${s.query}`);
    }
  }
} finally {
  await sys.teardown();
  await scratch.stop();
}
