import { existsSync, readFileSync } from 'node:fs';
import { find, type Metric, type ResultRow } from './results.js';
import { renderJobLife } from './job-life.js';
import { renderKeyCost } from './key-cost.js';
import type { SteadyPlan } from './steady.js';

export interface ReportContext {
  command: string;
  quick: boolean;
  reps: number;
  startedAt: Date;
  durationS: number;
  sizes: Record<string, number>;
  versions: Record<string, string>;
  machine: Record<string, string>;
  pgSettings: { name: string; setting: string }[];
  configurations: Record<string, string>;
  notes: string[];
  /** S9's plan (bench/lib/steady.ts). */
  steady?: SteadyPlan;
}

const SCENARIOS: { id: string; what: string; metrics: Metric[] }[] = [
  { id: 'S1', what: 'single enqueue, 8 concurrent callers', metrics: ['jobs_per_s'] },
  { id: 'S2', what: 'bulk enqueue, batches of 1,000', metrics: ['jobs_per_s'] },
  { id: 'S3-1w', what: 'drain no-op jobs, 1 worker process', metrics: ['jobs_per_s'] },
  { id: 'S3-2w', what: 'drain no-op jobs, 2 worker processes', metrics: ['jobs_per_s'] },
  { id: 'S4', what: 'enqueue-to-start latency at 200 jobs/s, idle worker', metrics: ['p50_ms', 'p95_ms', 'p99_ms', 'max_ms'] },
  { id: 'S5', what: 'plain-SQL claim-100-and-complete, 4 connections', metrics: ['jobs_per_s'] },
  { id: 'S6', what: 'S3 (1 worker) with finished jobs retained', metrics: ['jobs_per_s'] },
  { id: 'S7', what: 'S3 (1 worker) while a transaction stays open', metrics: ['jobs_per_s'] },
  { id: 'S8', what: 'S3 (1 worker) with future-scheduled jobs waiting in the queue', metrics: ['jobs_per_s'] },
];
const SYSTEMS = ['spool', 'spool-grpc', 'graphile-worker', 'pg-boss', 'plain-sql'];
/** S9 runs for Spool and both peers. */
const S9_SYSTEMS = ['spool', 'graphile-worker', 'pg-boss'];

function fmt(v: number | null | undefined, metric: Metric): string {
  if (v == null) return 'n/a';
  if (metric === 'completion_ratio') return `${(v * 100).toFixed(1)}%`;
  if (metric === 'backlog_growth') return Math.round(v).toLocaleString('en-US');
  if (metric === 'backlog_slope') return v.toFixed(2);
  return metric === 'jobs_per_s' || metric === 'offered_per_s' ? Math.round(v).toLocaleString('en-US') : v.toFixed(1);
}

function cell(row: ResultRow | undefined): string {
  if (!row) return '–';
  if (row.median == null) return 'n/a';
  // An en dash between negative numbers reads as a minus: "to" then.
  const dash = (row.min ?? 0) < 0 ? ' to ' : '–';
  return `${fmt(row.median, row.metric)} (${fmt(row.min, row.metric)}${dash}${fmt(row.max, row.metric)})`;
}

function ratio(a: ResultRow | undefined, b: ResultRow | undefined, lowerIsBetter = false): number | null {
  if (a?.median == null || b?.median == null || a.median === 0 || b.median === 0) return null;
  return lowerIsBetter ? b.median / a.median : a.median / b.median;
}

function r(x: number | null): string {
  return x == null ? 'n/a' : `${x.toFixed(2)}×`;
}

/** a ÷ b per repetition, pairing the runs of the same repetition (by position in files written before repetitions were recorded). */
function ratioPerRep(a: ResultRow | undefined, b: ResultRow | undefined): number[] {
  if (!a?.runs.length || !b?.runs.length) return [];
  const repsA = a.reps ?? a.runs.map((_, i) => i + 1);
  const repsB = b.reps ?? b.runs.map((_, i) => i + 1);
  const out: number[] = [];
  repsA.forEach((rep, i) => {
    const j = repsB.indexOf(rep);
    if (j >= 0 && b.runs[j]) out.push(a.runs[i]! / b.runs[j]!);
  });
  return out;
}

type Unit = '×' | 'ms' | 's' | 'jobs/s' | '%';

interface Target {
  name: string;
  /** Scenario whose notes explain a missing number. */
  scenario: string;
  /** From the medians (a ratio of medians for ratios). */
  measured: number | null;
  /** The same quantity per repetition: its spread against the margin to the goal says whether the verdict holds. */
  perRep: number[];
  goal: number;
  unit: Unit;
  atMost?: boolean;
  /** A verdict decided otherwise than by measured vs goal (S9 recovery when a repetition never recovered). */
  verdict?: 'missed' | 'inconclusive';
  detail?: string;
}

function show(v: number, unit: Unit): string {
  if (unit === 'ms') return `${v.toFixed(1)} ms`;
  if (unit === 's') return `${v.toFixed(1)} s`;
  if (unit === 'jobs/s') return `${v.toFixed(2)} jobs/s`;
  if (unit === '%') return `${(v * 100).toFixed(1)}%`;
  return `${v.toFixed(2)}×`;
}

/** docs/design.md §7's bars and S9's (bench/NOTES.md), for Spool. */
function targets(rows: ResultRow[]): Target[] {
  const s = (system: string, scenario: string, metric: Metric = 'jobs_per_s') => find(rows, system, scenario, metric);
  const vs = (name: string, scenario: string, a: ResultRow | undefined, b: ResultRow | undefined, goal: number, atMost = false): Target => ({
    name, scenario, goal, atMost, unit: '×', measured: a?.median != null && b?.median ? a.median / b.median : null, perRep: ratioPerRep(a, b),
  });
  const value = (name: string, scenario: string, row: ResultRow | undefined, goal: number, unit: Unit, atMost = false): Target => ({
    name, scenario, goal, atMost, unit, measured: row?.median ?? null, perRep: row?.runs ?? [],
  });
  const s3 = s('spool', 'S3-1w');
  const offered = s('spool', 'S9-held', 'offered_per_s')?.median;
  const recovery = value('S9 p99 (5 s window) back to ≤ 1.2× clean p99 within 60 s of the held transaction’s end', 'S9', s('spool', 'S9', 'recovery_s'), 60, 's', true);
  const recovered = s('spool', 'S9', 'recovered');
  if (recovered?.runs.some((x) => x === 0)) {
    const horizon = recovery.perRep.length ? Math.max(...recovery.perRep) : 0;
    const never = recovered.runs.filter((x) => x === 0).length;
    recovery.detail = `${never} of ${recovered.runs.length} repetitions not recovered within the ${Math.round(horizon)} s recovery phase`;
    recovery.verdict = horizon >= recovery.goal ? 'missed' : 'inconclusive';
  }
  return [
    vs('S1 ≥ 2× graphile-worker', 'S1', s('spool', 'S1'), s('graphile-worker', 'S1'), 2),
    vs('S2 ≥ 1.0× pg-boss', 'S2', s('spool', 'S2'), s('pg-boss', 'S2'), 1),
    vs('S2 ≥ 0.8× graphile-worker', 'S2', s('spool', 'S2'), s('graphile-worker', 'S2'), 0.8),
    vs('S3 (1 worker) ≥ 1.2× pg-boss', 'S3', s3, s('pg-boss', 'S3-1w'), 1.2),
    vs('S3 (1 worker) ≥ 0.6× graphile-worker', 'S3', s3, s('graphile-worker', 'S3-1w'), 0.6),
    vs('S3 with 2 worker processes ≥ 1.0× with 1', 'S3', s('spool', 'S3-2w'), s3, 1),
    vs('S4 p50 ≤ 1.5× graphile-worker’s p50', 'S4', s('spool', 'S4', 'p50_ms'), s('graphile-worker', 'S4', 'p50_ms'), 1.5, true),
    vs('S4 p99 ≤ pg-boss’s p99 (1.0×)', 'S4', s('spool', 'S4', 'p99_ms'), s('pg-boss', 'S4', 'p99_ms'), 1, true),
    vs('S6 ≥ 0.95× S3', 'S6', s('spool', 'S6'), s3, 0.95),
    vs('S7 ≥ 0.8× S3', 'S7', s('spool', 'S7'), s3, 0.8),
    vs('S8 ≥ 0.95× S3', 'S8', s('spool', 'S8'), s3, 0.95),
    value('S9 completions while held ≥ 0.95× offered', 'S9', s('spool', 'S9-held', 'completion_ratio'), 0.95, '%'),
    // "No growing backlog": the per-second backlog's slope over the held phase stays under 1% of the offered rate.
    value(`S9 backlog not growing while held (slope ≤ 1% of offered${offered ? `, ${(offered / 100).toFixed(1)} jobs/s` : ''})`, 'S9', s('spool', 'S9-held', 'backlog_slope'), offered ? offered / 100 : Number.NaN, 'jobs/s', true),
    value('S9 held p99 ≤ 3× clean p99', 'S9', s('spool', 'S9', 'p99_ratio'), 3, '×', true),
    recovery,
  ];
}

function met(t: Target): boolean | null {
  if (t.verdict === 'missed') return false;
  if (t.measured == null || Number.isNaN(t.goal) || t.verdict === 'inconclusive') return null;
  return t.atMost ? t.measured <= t.goal : t.measured >= t.goal;
}

/** The repetitions' range, and whether it is wider than the margin between the median and the goal (then the verdict could flip). */
function spread(t: Target): { range: string; wide: boolean } {
  if (t.perRep.length < 2 || t.measured == null) return { range: '', wide: false };
  const lo = Math.min(...t.perRep);
  const hi = Math.max(...t.perRep);
  const lower = show(lo, t.unit).replace(/ (ms|s|jobs\/s)$/, '');
  return { range: `${lower}${lo < 0 ? ' to ' : '–'}${show(hi, t.unit)}`, wide: hi - lo > Math.abs(t.measured - t.goal) };
}

function verdictText(t: Target): string {
  const m = met(t);
  const base = m == null ? (t.verdict === 'inconclusive' ? 'inconclusive' : 'not measured') : m ? 'met' : '**missed**';
  return spread(t).wide ? `${base} (spread wider than margin)` : base;
}

/** S9 per system and phase: medians with min–max over the repetitions. */
function steadySection(rows: ResultRow[], ctx: ReportContext): string[] {
  if (!rows.some((x) => x.scenario.startsWith('S9'))) return [];
  const p = ctx.steady;
  const out = ['## S9: steady rate under a held transaction', ''];
  out.push(`A producer in the harness enqueues single jobs at ${p ? `${p.rate} jobs/s` : 'a fixed rate'} (open loop) while worker processes with ${p ? p.concurrency : 32} jobs in flight in total run them${p ? ` (${p.processes} process${p.processes === 1 ? '' : 'es'})` : ''}. Phases${p ? `: clean ${p.cleanS} s, held ${p.heldS} s (another session has an open transaction with an xid and a snapshot, idle), recovery ${p.recoveryS} s` : ''}. "completed" is completions in the phase over jobs enqueued in it; backlog is enqueued − completed, its growth from the phase's start to its end and the slope of the per-second backlog (jobs/s); pickup is enqueue → handler start of the jobs enqueued in the phase, and "enqueue call" the part of it until the producer's enqueue call was answered. Recovery: seconds from the end of the held transaction until the p99 of a sliding ${p?.windowS ?? 5} s window (by enqueue time) is ≤ ${p?.recoveredWithin ?? 1.2}× the clean phase's p99. Per-second figures: \`bench/results/s9-series.json\`.`, '');
  out.push('| system | phase | offered jobs/s | completed | backlog growth | backlog slope | pickup p50 ms | pickup p99 ms | enqueue call p99 ms |', '| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const sys of S9_SYSTEMS) {
    for (const phase of ['clean', 'held', 'recovery']) {
      const c = (m: Metric) => cell(find(rows, sys, `S9-${phase}`, m));
      if (!find(rows, sys, `S9-${phase}`, 'p99_ms')) continue;
      out.push(`| ${sys} | ${phase} | ${c('offered_per_s')} | ${c('completion_ratio')} | ${c('backlog_growth')} | ${c('backlog_slope')} | ${c('p50_ms')} | ${c('p99_ms')} | ${c('enqueue_p99_ms')} |`);
    }
  }
  out.push('', '| system | held p99 ÷ clean p99 | recovery s | repetitions recovered |', '| --- | --- | --- | --- |');
  for (const sys of S9_SYSTEMS) {
    const rec = find(rows, sys, 'S9', 'recovered');
    if (!rec) continue;
    const ratioRow = find(rows, sys, 'S9', 'p99_ratio');
    out.push(`| ${sys} | ${ratioRow?.median == null ? 'n/a' : `${ratioRow.median.toFixed(2)}× (${ratioRow.min!.toFixed(2)}–${ratioRow.max!.toFixed(2)})`} | ${cell(find(rows, sys, 'S9', 'recovery_s'))} | ${rec.runs.filter((x) => x === 1).length} of ${rec.runs.length} |`);
  }
  out.push('');
  return out;
}

/** BENCHMARKS.md, regenerated by every run. */
export function renderReport(rows: ResultRow[], ctx: ReportContext): string {
  const out: string[] = [];
  out.push('# Benchmarks', '');
  out.push(`Generated by \`${ctx.command}\` on ${ctx.startedAt.toISOString()} (${ctx.quick ? 'quick mode: reduced sizes' : 'full run'}, ${ctx.reps} repetitions, ${Math.round(ctx.durationS)} s). This file is rewritten by every run of \`bench/run.ts\`; the numbers are in \`bench/results/latest.json\`. Scenarios and targets: docs/design.md §7. A benchmark is not a test: nothing here runs in \`npm test\`.`, '');
  if (ctx.quick && existsSync(new URL('../results/full-run.md', import.meta.url))) {
    out.push('A full run (`npm run bench`) is kept in [bench/results/full-run.md](bench/results/full-run.md) with its numbers in `bench/results/full-run.json`.', '');
  }
  out.push('Each cell is the median of the repetitions with min–max in brackets. Ratios divide Spool\'s median by the peer\'s median from the same run (for latency: the peer\'s by Spool\'s, so above 1× means Spool is faster).', '');

  out.push('## Results', '');
  out.push(`| scenario | metric | ${SYSTEMS.join(' | ')} | spool ÷ graphile-worker | spool ÷ pg-boss |`);
  out.push(`| --- | --- | ${SYSTEMS.map(() => '---').join(' | ')} | --- | --- |`);
  for (const sc of SCENARIOS) {
    for (const metric of sc.metrics) {
      const cells = SYSTEMS.map((sys) => cell(find(rows, sys, sc.id, metric)));
      const lower = metric !== 'jobs_per_s';
      const spool = find(rows, 'spool', sc.id, metric);
      out.push(`| ${sc.id} ${sc.what} | ${metric} | ${cells.join(' | ')} | ${r(ratio(spool, find(rows, 'graphile-worker', sc.id, metric), lower))} | ${r(ratio(spool, find(rows, 'pg-boss', sc.id, metric), lower))} |`);
    }
  }
  out.push('');

  out.push(...steadySection(rows, ctx));

  out.push('## Targets', '');
  out.push('Ratios divide medians; "repetitions" is the same quantity per repetition (ratios pair the runs of one repetition). Where that range is wider than the distance between the median and the bar, the verdict says "spread wider than margin": another run could flip it.', '');
  out.push('| target | measured | repetitions | verdict |', '| --- | --- | --- | --- |');
  const ts = targets(rows);
  for (const t of ts) {
    const value = t.measured == null ? 'n/a' : show(t.measured, t.unit);
    out.push(`| ${t.name} | ${value}${t.detail ? ` (${t.detail})` : ''} | ${spread(t).range || '–'} | ${verdictText(t)} |`);
  }
  out.push('');
  const missed = ts.filter((t) => met(t) !== true);
  out.push('## Misses', '');
  if (missed.length === 0) out.push('Every target was met in this run.', '');
  for (const t of missed) {
    const why = rows.filter((row) => row.system === 'spool' && row.note && row.scenario.startsWith(t.scenario)).map((row) => row.note);
    const state = t.measured == null ? `not measured${why.length ? ` (${[...new Set(why)].join('; ')})` : ''}` : `${met(t) == null ? 'inconclusive' : 'measured'} ${show(t.measured, t.unit)}${t.detail ? ` (${t.detail})` : ''}${spread(t).range ? `, repetitions ${spread(t).range}` : ''}`;
    out.push(`- **${t.name}**: ${state}.`);
  }
  out.push('');
  for (const note of ctx.notes) out.push(note, '');
  const notesFile = new URL('../NOTES.md', import.meta.url);
  if (existsSync(notesFile)) out.push(readFileSync(notesFile, 'utf8').trim(), '');

  out.push('## How it was run', '');
  out.push(`- Command: \`${ctx.command}\``);
  out.push(`- Sizes: ${Object.entries(ctx.sizes).map(([k, v]) => `${k} ${v.toLocaleString('en-US')}`).join(', ')}`);
  out.push('- S8: the S3 drain (1 worker process) with `scheduledJobs` more jobs in the same queue, due an hour from now or later (spread over the following day), loaded through each system\'s bulk path (Spool `/jobs/bulk` with `scheduled_at`, graphile-worker `addJobs` with `runAt`, pg-boss `insert` with `startAfter`) and `VACUUM ANALYZE`d before the drain\'s jobs are loaded.');
  if (ctx.steady) out.push(`- S9: ${Object.entries(ctx.steady).map(([k, v]) => `${k} ${v}`).join(', ')} (environment variables in bench/NOTES.md).`);
  out.push('- Every system uses its own database in one embedded PostgreSQL cluster started by the harness (default durability: fsync and synchronous_commit on). Each scenario starts from empty tables; drains start after the jobs were bulk-loaded and `ANALYZE`d (without fresh statistics the peers\' fetch plans flip, docs/design.md §8). Drain time runs from the start signal to the last job being recorded as finished in the database.');
  out.push('- Worker processes are separate OS processes forked by the harness; enqueue load comes from the harness process.');
  for (const [sys, conf] of Object.entries(ctx.configurations)) out.push(`- ${sys}: ${conf}`);
  out.push('');
  out.push('## Versions', '');
  for (const [k, v] of Object.entries(ctx.versions)) out.push(`- ${k}: ${v}`);
  out.push('');
  out.push('## Machine', '');
  for (const [k, v] of Object.entries(ctx.machine)) out.push(`- ${k}: ${v}`);
  out.push('');
  out.push('## PostgreSQL settings', '');
  out.push('| setting | value |', '| --- | --- |');
  for (const s of ctx.pgSettings) out.push(`| ${s.name} | ${s.setting} |`);
  out.push('');
  const cost = new URL('../results/cost.json', import.meta.url);
  if (existsSync(cost)) out.push(...costSection(JSON.parse(readFileSync(cost, 'utf8')) as CostPhase[]));
  const flow = new URL('../results/flow.md', import.meta.url);
  if (existsSync(flow)) out.push(readFileSync(flow, 'utf8').trim(), '');
  // Written by hand from bench/ab-drain.ts and bench/rollup-cost.ts runs (their commands are in it), kept across runs.
  const overhead = new URL('../results/observability.md', import.meta.url);
  if (existsSync(overhead)) out.push(readFileSync(overhead, 'utf8').trim(), '');
  const scrape = new URL('../results/metrics-scrape.json', import.meta.url);
  if (existsSync(scrape)) {
    const m = JSON.parse(readFileSync(scrape, 'utf8')) as { rows: number; table_size: string; scrape_ms: { p50: number; p95: number; max: number }; refresh_ms: { p50: number; max: number } };
    out.push('## /metrics with a large jobs table', '');
    out.push(`From \`npm run bench:metrics\` (bench/results/metrics-scrape.json): ${m.rows.toLocaleString('en-US')} rows in spool.jobs (${m.table_size}); scrape p50 ${m.scrape_ms.p50.toFixed(1)} ms, p95 ${m.scrape_ms.p95.toFixed(1)} ms, max ${m.scrape_ms.max.toFixed(1)} ms; background aggregate refresh p50 ${m.refresh_ms.p50.toFixed(0)} ms. Details in docs/metrics.md.`, '');
  }
  return out.join('\n');
}

/** The fields of bench/results/cost.json (bench/cost.ts) that the summary needs. */
export interface CostPhase {
  system: string;
  phase: string;
  jobs: number;
  walBytes: number;
  walRecordBytes: number;
  indexEntries: Record<string, number>;
  statements: { op: string; hit: number; calls: number }[];
}

/** Per-job database cost from the last `npm run bench -- --cost`: counts that do not depend on machine load. */
export function costSection(phases: CostPhase[]): string[] {
  const lines = ['## Per-job database cost', '',
    'From `npm run bench -- --cost` (bench/results/cost.md has every statement; method and analysis in docs/performance.md). Counts, not times: they do not depend on machine load.', '',
    '| system | phase | WAL bytes | WAL bytes w/o full-page images | index entries | buffers hit (job path) |', '| --- | --- | --- | --- | --- | --- |'];
  for (const c of phases) {
    const idx = Object.values(c.indexEntries).reduce((a, b) => a + b, 0) / c.jobs;
    const hit = c.statements.filter((st) => st.op !== 'harness' && st.op !== 'background').reduce((a, st) => a + st.hit, 0) / c.jobs;
    lines.push(`| ${c.system} | ${c.phase} | ${Math.round(c.walBytes / c.jobs).toLocaleString('en-US')} | ${Math.round(c.walRecordBytes / c.jobs).toLocaleString('en-US')} | ${idx.toFixed(1)} | ${hit.toFixed(1)} |`);
  }
  lines.push('', ...renderJobLife(phases, '###'), ...renderKeyCost(phases, '###'));
  return lines;
}
