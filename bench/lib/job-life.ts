/**
 * A job's life in database work: bulk enqueue + drain (claim and complete),
 * per job, from the phases of `npm run bench -- --cost` (bench/cost.ts), and
 * docs/design.md §7's cost bar: each figure ≤ pg-boss's, then (stretch) ≤ 1.3×
 * graphile-worker's.
 */

/** What the summary needs of a cost phase (bench/results/cost.json). */
export interface LifePhase {
  system: string;
  phase: string;
  jobs: number;
  walBytes: number;
  indexEntries: Record<string, number>;
  statements: { op: string; hit: number }[];
}

export interface JobLife {
  system: string;
  walBytes: number;
  indexEntries: number;
  /** Buffers hit by the job path's statements (enqueue, claim, complete, per-request overhead). */
  bufferHits: number;
}

export const LIFE_PHASES = ['enqueue-bulk', 'drain'];
export const LIFE_FIGURES = [['walBytes', 'WAL bytes'], ['indexEntries', 'index entries'], ['bufferHits', 'buffer hits']] as const;
const STRETCH = 1.3;

export function jobLives(phases: LifePhase[]): JobLife[] {
  const out: JobLife[] = [];
  for (const system of [...new Set(phases.map((p) => p.system))]) {
    const mine = LIFE_PHASES.map((name) => phases.find((p) => p.system === system && p.phase === name));
    if (mine.some((p) => !p)) continue;
    const life: JobLife = { system, walBytes: 0, indexEntries: 0, bufferHits: 0 };
    for (const p of mine as LifePhase[]) {
      life.walBytes += p.walBytes / p.jobs;
      life.indexEntries += Object.values(p.indexEntries).reduce((a, b) => a + b, 0) / p.jobs;
      life.bufferHits += p.statements.filter((s) => s.op !== 'harness' && s.op !== 'background').reduce((a, s) => a + s.hit, 0) / p.jobs;
    }
    out.push(life);
  }
  return out;
}

const fmt = (v: number) => (v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(1));
const x = (a: number, b: number | undefined) => (b ? `${(a / b).toFixed(2)}×` : 'n/a');

/** Markdown: per system the three figures with their ratios to both peers, then Spool's verdicts. */
export function renderJobLife(phases: LifePhase[], heading = '##'): string[] {
  const lives = jobLives(phases);
  if (lives.length === 0) return [];
  const boss = lives.find((l) => l.system === 'pg-boss');
  const graphile = lives.find((l) => l.system === 'graphile-worker');
  const lines = [`${heading} Job life (per job: enqueue-bulk + drain)`, '',
    'WAL bytes (all, with full-page images), index entries written and buffers hit by the job path, summed over a bulk enqueue and a drain (claim + complete) of the same number of jobs. Bar (docs/design.md §7): each ≤ pg-boss\'s, stretch ≤ 1.3× graphile-worker\'s.', '',
    '| system | WAL bytes | ÷ pg-boss | ÷ graphile-worker | index entries | ÷ pg-boss | ÷ graphile-worker | buffer hits | ÷ pg-boss | ÷ graphile-worker |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |'];
  for (const l of lives) {
    lines.push(`| ${l.system} | ${LIFE_FIGURES.map(([k]) => `${fmt(l[k])} | ${x(l[k], boss?.[k])} | ${x(l[k], graphile?.[k])}`).join(' | ')} |`);
  }
  lines.push('');
  const verdicts: string[] = [];
  for (const l of lives.filter((v) => v.system.startsWith('spool'))) {
    for (const [k, label] of LIFE_FIGURES) {
      if (boss) verdicts.push(`| ${l.system} ${label} ≤ pg-boss | ${x(l[k], boss[k])} | ${l[k] <= boss[k] ? 'met' : '**missed**'} |`);
      if (graphile) verdicts.push(`| ${l.system} ${label} ≤ ${STRETCH}× graphile-worker (stretch) | ${x(l[k], graphile[k])} | ${l[k] <= STRETCH * graphile[k] ? 'met' : '**missed**'} |`);
    }
  }
  if (verdicts.length) lines.push('| target | measured | verdict |', '| --- | --- | --- |', ...verdicts, '');
  return lines;
}
