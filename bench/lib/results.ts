import { percentile, summarize } from './stats.js';

export type Metric = 'jobs_per_s' | 'p50_ms' | 'p95_ms' | 'p99_ms' | 'max_ms'
  // S9 (bench/lib/steady.ts), per phase and for the whole scenario:
  | 'offered_per_s' | 'enqueue_p99_ms' | 'completion_ratio' | 'backlog_growth' | 'backlog_slope' | 'p99_ratio' | 'recovery_s' | 'recovered';

/** One line of bench/results/latest.json. */
export interface ResultRow {
  system: string;
  scenario: string;
  metric: Metric;
  median: number | null;
  min: number | null;
  max: number | null;
  runs: number[];
  /** The repetition (1-based) each of `runs` was measured in: ratios pair runs of the same repetition. */
  reps?: number[];
  /** Why there is no number (n/a), when there is none. */
  note?: string;
}

/** Fractions and ratios keep four decimals (a bar of 0.95 needs more than two); the rest two. */
const FINE: Metric[] = ['completion_ratio', 'p99_ratio'];
const rounder = (metric: Metric) => (v: number) => (FINE.includes(metric) ? Math.round(v * 1e4) / 1e4 : Math.round(v * 100) / 100);

/** Collects repeated measurements and notes per (system, scenario, metric). */
export class Results {
  readonly #runs = new Map<string, { system: string; scenario: string; metric: Metric; runs: number[]; reps: number[]; note?: string }>();
  /** The repetition being measured; set by the run loop. */
  rep = 1;

  #entry(system: string, scenario: string, metric: Metric) {
    const key = `${system}|${scenario}|${metric}`;
    let e = this.#runs.get(key);
    if (!e) {
      e = { system, scenario, metric, runs: [], reps: [] };
      this.#runs.set(key, e);
    }
    return e;
  }

  add(system: string, scenario: string, metric: Metric, value: number): void {
    const e = this.#entry(system, scenario, metric);
    e.runs.push(rounder(metric)(value));
    e.reps.push(this.rep);
  }

  /** Records latency samples of one run as p50/p95/p99/max. */
  addLatency(system: string, scenario: string, samples: number[]): void {
    this.add(system, scenario, 'p50_ms', percentile(samples, 50));
    this.add(system, scenario, 'p95_ms', percentile(samples, 95));
    this.add(system, scenario, 'p99_ms', percentile(samples, 99));
    this.add(system, scenario, 'max_ms', Math.max(...samples));
  }

  note(system: string, scenario: string, metric: Metric, note: string): void {
    this.#entry(system, scenario, metric).note = note;
  }

  rows(): ResultRow[] {
    return [...this.#runs.values()].map((e) => {
      if (e.runs.length === 0) return { system: e.system, scenario: e.scenario, metric: e.metric, median: null, min: null, max: null, runs: [], note: e.note ?? 'n/a' };
      const s = summarize(e.runs);
      const round = rounder(e.metric);
      return { system: e.system, scenario: e.scenario, metric: e.metric, median: round(s.median), min: round(s.min), max: round(s.max), runs: e.runs, reps: e.reps, ...(e.note ? { note: e.note } : {}) };
    });
  }
}

export function find(rows: ResultRow[], system: string, scenario: string, metric: Metric): ResultRow | undefined {
  return rows.find((r) => r.system === system && r.scenario === scenario && r.metric === metric);
}
