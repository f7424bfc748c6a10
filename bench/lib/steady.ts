/**
 * S9: a steady enqueue rate while another session holds a transaction open.
 *
 * A producer in the harness enqueues single jobs at a fixed rate (open loop:
 * a slow enqueue does not delay the next) while worker processes run them.
 * Three phases: clean, held (another session of the system's database has an
 * open transaction with an xid and a snapshot, idle), recovery (after that
 * transaction ended). Per second: jobs enqueued and completed, backlog
 * (enqueued − completed), pickup latency (enqueue → handler start) of the jobs
 * enqueued in that second. Per phase: completions over offered, backlog growth
 * and its slope, pickup p50/p99; and how long after the held transaction ended
 * the p99 of a sliding window came back to the clean phase's.
 */
import type { WorkerGroup } from './children.js';
import { nowMs } from './http.js';
import { percentile } from './stats.js';
import type { QueueSystem } from '../systems/system.js';

export interface SteadyPlan {
  /** Offered jobs per second. */
  rate: number;
  cleanS: number;
  heldS: number;
  recoveryS: number;
  /** Jobs in flight at once, over all worker processes. */
  concurrency: number;
  processes: number;
  /** After the producer stops: how long to wait for the backlog to be worked off (latency samples of late jobs). */
  settleS: number;
  /** Recovery: the sliding window (s) and how close to the clean p99 it must come (×). */
  windowS: number;
  recoveredWithin: number;
}

/** The plan from the environment (docs in bench/NOTES.md); quick runs are shorter and slower. */
export function steadyPlan(quick: boolean, env: NodeJS.ProcessEnv = process.env): SteadyPlan {
  const n = (name: string, full: number, short: number) => {
    const v = env[name];
    if (v === undefined || v === '') return quick ? short : full;
    const x = Number(v);
    if (!Number.isFinite(x) || x <= 0) throw new Error(`${name} must be a positive number, not ${v}`);
    return x;
  };
  return {
    rate: n('S9_RATE', 800, 200),
    cleanS: n('S9_CLEAN_S', 30, 10),
    heldS: n('S9_HELD_S', 90, 25),
    recoveryS: n('S9_RECOVERY_S', 60, 20),
    concurrency: n('S9_CONCURRENCY', 32, 32),
    processes: n('S9_WORKERS', 1, 1),
    settleS: n('S9_SETTLE_S', 60, 20),
    windowS: n('S9_WINDOW_S', 5, 5),
    recoveredWithin: n('S9_RECOVERED_WITHIN', 1.2, 1.2),
  };
}

export type Phase = 'clean' | 'held' | 'recovery';

export interface SecondStats {
  /** Seconds since the producer started. */
  s: number;
  phase: Phase;
  enqueued: number;
  completed: number;
  /** Enqueued − completed, cumulative, at the end of this second. */
  backlog: number;
  /** Enqueue calls issued in this second that had been answered by its end, and the slowest answer among this second's calls (ms). */
  acknowledged: number;
  enqueue_max_ms: number | null;
  /** Pickup latency of the jobs enqueued in this second (ms); null when none started. */
  p50_ms: number | null;
  p99_ms: number | null;
}

export interface PhaseStats {
  phase: Phase;
  seconds: number;
  offeredPerS: number;
  completedPerS: number;
  /** Completions in the phase over jobs enqueued in it. */
  completionRatio: number;
  backlogStart: number;
  backlogEnd: number;
  backlogMax: number;
  /** Least-squares slope of the per-second backlog (jobs/s); about 0 when the workers keep up. */
  backlogSlope: number;
  p50Ms: number;
  p99Ms: number;
  /** How long the enqueue calls issued in the phase took to be answered: part of the pickup latency, on the producer's side. */
  enqueueP50Ms: number;
  enqueueP99Ms: number;
}

export interface SteadyOutcome {
  plan: SteadyPlan;
  phases: PhaseStats[];
  /** When the held transaction was open, seconds since the producer started. */
  heldFromS: number;
  heldToS: number;
  /** Seconds from the end of the held transaction until the sliding-window p99 was ≤ recoveredWithin × the clean p99; null if not within the recovery phase. */
  recoveryS: number | null;
  /** Jobs not started by the end of the settle wait (their latency counts as at least the wait). */
  unstarted: number;
  series: SecondStats[];
}

const sleepUntil = (at: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, at - nowMs())));

/** Runs S9 on `sys`; `log` gets a progress line every 5 s. */
export async function runSteady(sys: QueueSystem, plan: SteadyPlan, log: (line: string) => void = () => {}): Promise<SteadyOutcome> {
  const totalS = plan.cleanS + plan.heldS + plan.recoveryS;
  const group = await sys.steadyWorkers(plan.concurrency, plan.processes);
  const issuedAt: number[] = [];
  /** How long each enqueue call took (ms), by position in issuedAt. */
  const answeredIn: number[] = [];
  let failure: unknown = null;
  let heldFrom = 0;
  let heldTo = 0;
  let t0 = 0;
  try {
    t0 = nowMs();
    const holder = (async () => {
      await sleepUntil(t0 + plan.cleanS * 1000);
      const held = await sys.holdXmin();
      heldFrom = nowMs();
      try {
        await sleepUntil(t0 + (plan.cleanS + plan.heldS) * 1000);
      } finally {
        await held.end();
        heldTo = nowMs();
      }
    })().catch((err: unknown) => {
      failure ??= err;
    });
    const progress = setInterval(() => {
      const s = (nowMs() - t0) / 1000;
      const phase = s < plan.cleanS ? 'clean' : s < plan.cleanS + plan.heldS ? 'held' : 'recovery';
      log(`${Math.round(s)} s (${phase}): enqueued ${issuedAt.length}, completed ${group.completed}, backlog ${issuedAt.length - group.completed}`);
    }, 5000);
    try {
      const interval = 1000 / plan.rate;
      const total = Math.round(plan.rate * totalS);
      const inflight: Promise<unknown>[] = [];
      for (let i = 0; i < total && !failure; i++) {
        const wait = t0 + i * interval - nowMs();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const t = nowMs();
        const k = issuedAt.push(t) - 1;
        inflight.push(sys.enqueueStamped(t).then(() => {
          answeredIn[k] = nowMs() - t;
          return null;
        }, (err: unknown) => err));
        // Settle finished calls now and then so that a long run does not keep every promise.
        if (inflight.length >= 5000) {
          const outcomes = await Promise.all(inflight.splice(0, 2500));
          failure ??= outcomes.find((o) => o !== null) ?? null;
        }
      }
      const outcomes = await Promise.all(inflight);
      failure ??= outcomes.find((o) => o !== null) ?? null;
      await holder;
    } finally {
      clearInterval(progress);
    }
    if (failure) throw failure;
    const settleBy = nowMs() + plan.settleS * 1000;
    while (group.completed < issuedAt.length && nowMs() < settleBy) await new Promise((r) => setTimeout(r, 50));
    // Latency reports trail completions by up to 20 ms.
    await new Promise((r) => setTimeout(r, 100));
  } finally {
    await group.stop();
  }
  return analyse(plan, t0, issuedAt, answeredIn, group, heldFrom, heldTo, nowMs());
}

function slope(ys: number[]): number {
  if (ys.length < 2) return 0;
  const mx = (ys.length - 1) / 2;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  ys.forEach((y, x) => {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  });
  return num / den;
}

function analyse(plan: SteadyPlan, t0: number, issuedAt: number[], answeredIn: number[], group: WorkerGroup, heldFrom: number, heldTo: number, endedAt: number): SteadyOutcome {
  const totalS = plan.cleanS + plan.heldS + plan.recoveryS;
  const phaseOf = (s: number): Phase => (s < plan.cleanS ? 'clean' : s < plan.cleanS + plan.heldS ? 'held' : 'recovery');
  const enq = new Array<number>(totalS).fill(0);
  const acked = new Array<number>(totalS).fill(0);
  const enqueueMs: number[][] = Array.from({ length: totalS }, () => []);
  const done = new Array<number>(totalS).fill(0);
  const second = (at: number) => Math.floor((at - t0) / 1000);
  issuedAt.forEach((t, k) => {
    const s = second(t);
    if (s < 0 || s >= totalS) return;
    enq[s]! += 1;
    const took = answeredIn[k];
    if (took !== undefined) {
      enqueueMs[s]!.push(took);
      if (second(t + took) === s) acked[s]! += 1;
    }
  });
  for (const [at, n] of group.doneLog) {
    const s = second(at);
    if (s >= 0 && s < totalS) done[s]! += n;
  }
  // Pickup samples by enqueue time; jobs that never started count as at least (end − enqueue).
  const samples: { t: number; ms: number }[] = group.enqueuedAt.map((t, i) => ({ t, ms: group.latencies[i]! }));
  const seen = new Set(group.enqueuedAt);
  let unstarted = 0;
  for (const t of issuedAt) {
    if (!seen.has(t)) {
      unstarted += 1;
      samples.push({ t, ms: endedAt - t });
    }
  }
  samples.sort((a, b) => a.t - b.t);
  const bySecond: number[][] = Array.from({ length: totalS }, () => []);
  for (const x of samples) {
    const s = second(x.t);
    if (s >= 0 && s < totalS) bySecond[s]!.push(x.ms);
  }
  const series: SecondStats[] = [];
  let backlog = 0;
  for (let s = 0; s < totalS; s++) {
    backlog += enq[s]! - done[s]!;
    const l = bySecond[s]!;
    const e = enqueueMs[s]!;
    series.push({ s, phase: phaseOf(s), enqueued: enq[s]!, acknowledged: acked[s]!, enqueue_max_ms: e.length ? round(Math.max(...e)) : null, completed: done[s]!, backlog, p50_ms: l.length ? round(percentile(l, 50)) : null, p99_ms: l.length ? round(percentile(l, 99)) : null });
  }
  const phases: PhaseStats[] = [];
  for (const [phase, from, to] of [['clean', 0, plan.cleanS], ['held', plan.cleanS, plan.cleanS + plan.heldS], ['recovery', plan.cleanS + plan.heldS, totalS]] as const) {
    const rows = series.slice(from, to);
    const e = rows.reduce((a, r) => a + r.enqueued, 0);
    const c = rows.reduce((a, r) => a + r.completed, 0);
    const lat = bySecond.slice(from, to).flat();
    const took = enqueueMs.slice(from, to).flat();
    phases.push({
      phase,
      seconds: to - from,
      offeredPerS: e / (to - from),
      completedPerS: c / (to - from),
      completionRatio: e ? c / e : 0,
      backlogStart: from === 0 ? 0 : series[from - 1]!.backlog,
      backlogEnd: rows.at(-1)?.backlog ?? 0,
      backlogMax: Math.max(0, ...rows.map((r) => r.backlog)),
      backlogSlope: slope(rows.map((r) => r.backlog)),
      p50Ms: lat.length ? percentile(lat, 50) : Number.NaN,
      p99Ms: lat.length ? percentile(lat, 99) : Number.NaN,
      enqueueP50Ms: took.length ? percentile(took, 50) : Number.NaN,
      enqueueP99Ms: took.length ? percentile(took, 99) : Number.NaN,
    });
  }
  // Recovery: windows ending at the held transaction's end and every 0.5 s after it.
  const cleanP99 = phases[0]!.p99Ms;
  const bound = cleanP99 * plan.recoveredWithin;
  let recoveryS: number | null = null;
  const last = t0 + totalS * 1000;
  for (let x = heldTo; x <= last; x += 500) {
    const w = samples.filter((v) => v.t > x - plan.windowS * 1000 && v.t <= x).map((v) => v.ms);
    if (w.length >= 10 && percentile(w, 99) <= bound) {
      recoveryS = (x - heldTo) / 1000;
      break;
    }
  }
  return { plan, phases, heldFromS: (heldFrom - t0) / 1000, heldToS: (heldTo - t0) / 1000, recoveryS, unstarted, series };
}

const round = (v: number) => Math.round(v * 100) / 100;
