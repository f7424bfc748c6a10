/**
 * What a job_key policy costs per single enqueue against a plain one
 * (docs/jobs-api.md, "Job keys"), from the key phases of
 * `npm run bench -- --cost` (bench/cost.ts): written into
 * bench/results/cost.md and into BENCHMARKS.md by every run, so the
 * comparison is never only a hand-written table that a rerun drops.
 */

/** What the comparison needs of a cost phase (bench/results/cost.json). */
export interface KeyPhase {
  system: string;
  phase: string;
  jobs: number;
  walRecordBytes: number;
  indexEntries: Record<string, number>;
  statements: { op: string; hit: number; calls: number }[];
}

/** The hot keys of the dedupe-hit and debounce phases: that many calls create, the rest find the key's job. */
export const HOT_KEYS = 20;

/** The plain phase the key phases are compared with. */
export const PLAIN_PHASE = 'enqueue-single';

/** The key phases (bench/cost.ts runs them in this order) and what each call does, for `jobs` calls. */
export const KEY_PHASES: readonly { phase: string; what: (jobs: number) => string }[] = [
  { phase: 'enqueue-dedupe-new', what: () => '`dedupe`, a new key each call: every call creates' },
  { phase: 'enqueue-dedupe-hit', what: (jobs) => `\`dedupe\` over ${HOT_KEYS} keys: ${HOT_KEYS} calls create, ${(jobs - HOT_KEYS).toLocaleString('en-US')} find the job` },
  { phase: 'enqueue-debounce', what: (jobs) => `\`debounce\` over ${HOT_KEYS} keys: ${HOT_KEYS} calls create, ${(jobs - HOT_KEYS).toLocaleString('en-US')} move the waiting job` },
];

/** Per-call figures of a phase: the job path's statements only (not the harness's or background work). */
function perCall(p: KeyPhase) {
  const path = p.statements.filter((s) => s.op !== 'harness' && s.op !== 'background');
  return {
    wal: p.walRecordBytes / p.jobs,
    index: Object.values(p.indexEntries).reduce((a, b) => a + b, 0) / p.jobs,
    statements: path.reduce((a, s) => a + s.calls, 0) / p.jobs,
    hit: path.reduce((a, s) => a + s.hit, 0) / p.jobs,
  };
}

const num = (v: number, digits = 1) => (Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(digits));
const times = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a');

/** Markdown: Spool's key phases beside its plain single enqueue, per call; empty when the run has none of them. */
export function renderKeyCost(phases: KeyPhase[], heading = '##'): string[] {
  const find = (phase: string) => phases.find((p) => p.system === 'spool' && p.phase === phase);
  const plain = find(PLAIN_PHASE);
  const keyed = KEY_PHASES.flatMap((k) => {
    const p = find(k.phase);
    return p ? [{ ...k, p }] : [];
  });
  if (!plain || keyed.length === 0) return [];
  const base = perCall(plain);
  const lines = [`${heading} Job keys (what a key policy costs per single enqueue)`, '',
    `The \`enqueue-*\` key phases run ${PLAIN_PHASE}'s shape (${plain.jobs.toLocaleString('en-US')} single enqueues over HTTP from 8 callers) with a \`job_key\` on every call, against ${PLAIN_PHASE} without one (docs/jobs-api.md, "Job keys"). Per call:`, '',
    '| phase | what each call does | WAL bytes w/o FPI | ÷ plain | index entries | ÷ plain | statements | buffers hit | ÷ plain |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    `| ${PLAIN_PHASE} | a plain job | ${num(base.wal)} | 1.00× | ${num(base.index)} | 1.00× | ${num(base.statements, 2)} | ${num(base.hit)} | 1.00× |`];
  for (const { phase, what, p } of keyed) {
    const c = perCall(p);
    lines.push(`| ${phase} | ${what(p.jobs)} | ${num(c.wal)} | ${times(c.wal, base.wal)} | ${num(c.index)} | ${times(c.index, base.index)} | ${num(c.statements, 2)} | ${num(c.hit)} | ${times(c.hit, base.hit)} |`);
  }
  lines.push('',
    'A keyed enqueue runs in a transaction of its own group commit: the keys\' lock, the decision, and the insert of what is new (about one statement per call more than a plain enqueue, which shares one INSERT among callers). A new keyed job writes two more index entries (the two partial key indexes); a deduplicated call writes almost nothing; a debounce rewrites the waiting job (a new row version, its index entries and a history row). Jobs without a key pay nothing: the plain path is the one statement it was.',
    '');
  return lines;
}
