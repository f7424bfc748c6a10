/**
 * What the activity history's rollup costs for one S3 drain, measured alone
 * (`node --import tsx bench/rollup-cost.ts [jobs] [reps]`): a server with
 * STATS_ROLLUP=off loads and drains `jobs` jobs as S3 does (one SDK worker
 * process over HTTP), then this process rolls up the history the drain left
 * (queue-stats-rollup, as the leader would) and reports the CPU PostgreSQL
 * and this process used for it, per 1,000 jobs, beside the drain's own CPU.
 * Smaller than the drain's noise on a shared machine, it is counted here
 * rather than guessed from bench/ab-drain.ts.
 */
import { QueueStatsRollup } from '@spool/engine';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';
import { cpuDuring } from './lib/role-cpu.js';
import { summarize } from './lib/stats.js';
import { SpoolSystem } from './systems/spool.js';

const jobs = Number(process.argv[2] ?? 20_000);
const reps = Number(process.argv[3] ?? 3);
const scratch = await startScratchPostgres({ prefix: 'spool-rollup-cost-', embeddedOnly: true });
const drain: number[] = [];
const rollupPg: number[] = [];
const rollupNode: number[] = [];
const rollupWall: number[] = [];
try {
  for (let rep = 0; rep < reps; rep++) {
    const name = `rollup_${rep}`;
    const sys = new SpoolSystem(await scratch.createDatabase(name), 'http', { STATS_ROLLUP: 'off' });
    try {
      await sys.setup();
      await sys.preload(jobs, 1000, 'api');
      const drained = await cpuDuring(() => sys.drain(jobs, 1));
      drain.push(['postgres', 'server', 'worker'].reduce((sum, role) => sum + (drained.cpu.get(role as never) ?? 0), 0) / (jobs / 1000));
      const rollup = new QueueStatsRollup(sys.db);
      const started = performance.now();
      const rolled = await cpuDuring(() => rollup.drain());
      rollupWall.push(performance.now() - started);
      rollupPg.push((rolled.cpu.get('postgres') ?? 0) / (jobs / 1000));
      rollupNode.push((rolled.cpu.get('harness') ?? 0) / (jobs / 1000));
      console.error(`[rollup-cost] ${jobs} jobs: drain ${drain.at(-1)!.toFixed(3)} CPU s per 1,000 jobs; rollup ${rollupPg.at(-1)!.toFixed(4)} (PostgreSQL) + ${rollupNode.at(-1)!.toFixed(4)} (Node) CPU s per 1,000 jobs, ${Math.round(rollupWall.at(-1)!)} ms, ${JSON.stringify(Object.fromEntries(rollup.counters))}`);
    } finally {
      await sys.teardown();
      await scratch.dropDatabase(name);
    }
  }
} finally {
  await scratch.stop();
}
const show = (values: number[], digits: number) => {
  const s = summarize(values);
  return `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
};
console.log(`${reps} drains of ${jobs.toLocaleString('en-US')} jobs. CPU s per 1,000 jobs, median (min–max): drain (PostgreSQL + server + worker) ${show(drain, 3)}; `
  + `rollup of its history: PostgreSQL ${show(rollupPg, 4)}, Node ${show(rollupNode, 4)}; rollup wall ${show(rollupWall, 0)} ms; `
  + `rollup ÷ drain ${(100 * (summarize(rollupPg).median + summarize(rollupNode).median) / summarize(drain).median).toFixed(1)} %.`);
