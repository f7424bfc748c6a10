import { api, ApiError } from './api';
import { onLiveEvent } from './events';
import { getSession, onSessionChange } from './session';
import type { Dashboard, JobStats, QueueStats, QueueSummary } from './types';

/**
 * The Overview's time series. Throughput per minute is counted from the live
 * event stream (job.created / job.completed / job.failed) from the moment the
 * tab signs in; depth and oldest-pending age are sampled while the Overview is
 * open. Both are kept in sessionStorage for an hour, so moving between pages
 * or reloading keeps the picture. Long-term history belongs to /metrics.
 */

export interface Minute {
  /** Start of the minute, unix seconds. */
  t: number;
  created: number;
  completed: number;
  failed: number;
}

export interface Sample {
  t: number;
  pending: number;
  processing: number;
  deadletter: number;
  oldestPendingSeconds: number | null;
}

export interface QueueRow {
  name: string;
  pending: number;
  processing: number;
  paused: boolean;
  oldestPendingSeconds: number | null;
  failed24h: number | null;
  completed24h: number | null;
}

export interface Snapshot {
  pending: number;
  processing: number;
  deadletter: number;
  completed24h: number | null;
  failed24h: number | null;
  avgProcessingMs: number | null;
  avgWaitMs: number | null;
  oldestPendingSeconds: number | null;
  workers: { total: number; healthy: number } | null;
  queues: QueueRow[];
  /** False when the server has no GET /dashboard and the figures come from /jobs/stats. */
  aggregate: boolean;
}

const WINDOW_SECONDS = 3600;
const KEY = 'spool.overview';
const MAX_QUEUE_STATS = 12;

let minutes: Minute[] = [];
let samples: Sample[] = [];
/** When counting began (unix seconds): minutes before it were not observed, so they are not drawn as zeros. */
let since = Math.floor(Date.now() / 1000);
const listeners = new Set<() => void>();

function load(): void {
  try {
    const raw = sessionStorage.getItem(KEY);
    const parsed = raw ? (JSON.parse(raw) as { minutes?: Minute[]; samples?: Sample[]; since?: number }) : {};
    minutes = Array.isArray(parsed.minutes) ? parsed.minutes : [];
    samples = Array.isArray(parsed.samples) ? parsed.samples : [];
    if (typeof parsed.since === 'number') since = parsed.since;
  } catch {
    minutes = [];
    samples = [];
  }
}

let saveTimer: ReturnType<typeof setTimeout> | null = null;
function changed(): void {
  const cutoff = Date.now() / 1000 - WINDOW_SECONDS;
  minutes = minutes.filter((m) => m.t >= cutoff);
  samples = samples.filter((s) => s.t >= cutoff);
  for (const listener of listeners) listener();
  saveTimer ??= setTimeout(() => {
    saveTimer = null;
    if (getSession()) sessionStorage.setItem(KEY, JSON.stringify({ minutes, samples, since }));
  }, 1000);
}

function count(field: 'created' | 'completed' | 'failed'): void {
  const t = Math.floor(Date.now() / 60_000) * 60;
  let bucket = minutes[minutes.length - 1];
  if (!bucket || bucket.t !== t) {
    bucket = { t, created: 0, completed: 0, failed: 0 };
    minutes.push(bucket);
  }
  bucket[field] += 1;
  changed();
}

load();
onLiveEvent((event) => {
  if (event.type === 'job.created') count('created');
  else if (event.type === 'job.completed') count('completed');
  else if (event.type === 'job.failed') count('failed');
});
onSessionChange(() => {
  minutes = [];
  samples = [];
  since = Math.floor(Date.now() / 1000);
  if (!getSession()) sessionStorage.removeItem(KEY);
});

export function onOverviewChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Per-minute counts since counting began (at most the last hour), zeros
 * filled in. A trailing point closes the current minute so the step that
 * draws it has a width.
 */
export function throughputSeries(now = Date.now()): [number[], number[], number[], number[]] {
  const end = Math.floor(now / 60_000) * 60;
  const byMinute = new Map(minutes.map((m) => [m.t, m]));
  const xs: number[] = [];
  const created: number[] = [];
  const completed: number[] = [];
  const failed: number[] = [];
  const first = Math.max(end - WINDOW_SECONDS + 60, Math.floor(since / 60) * 60);
  for (let t = first; t <= end; t += 60) {
    const m = byMinute.get(t);
    xs.push(t);
    created.push(m?.created ?? 0);
    completed.push(m?.completed ?? 0);
    failed.push(m?.failed ?? 0);
  }
  xs.push(end + 60);
  created.push(created[created.length - 1] ?? 0);
  completed.push(completed[completed.length - 1] ?? 0);
  failed.push(failed[failed.length - 1] ?? 0);
  return [xs, created, completed, failed];
}

export function sampleSeries(): Sample[] {
  return samples;
}

async function queueRows(dashboard: Dashboard | null, configured: QueueSummary[]): Promise<QueueRow[]> {
  const rows = new Map<string, QueueRow>();
  for (const q of dashboard?.queues ?? []) rows.set(q.name, { name: q.name, pending: q.pending, processing: q.processing, paused: q.paused, oldestPendingSeconds: null, failed24h: null, completed24h: null });
  for (const q of configured) {
    if (!rows.has(q.queue_name)) rows.set(q.queue_name, { name: q.queue_name, pending: 0, processing: 0, paused: !q.enabled, oldestPendingSeconds: null, failed24h: null, completed24h: null });
  }
  // Oldest age and 24 h figures cost one call per queue: ask for the busiest few.
  const busiest = [...rows.values()].sort((a, b) => b.pending + b.processing - (a.pending + a.processing)).slice(0, MAX_QUEUE_STATS);
  await Promise.all(busiest.map(async (row) => {
    const stats = await api<QueueStats>('GET', `/queues/${encodeURIComponent(row.name)}/stats`).catch(() => null);
    if (!stats) return;
    row.pending = stats.pending_jobs;
    row.processing = stats.processing_jobs;
    row.oldestPendingSeconds = stats.max_job_age_seconds;
    row.failed24h = stats.failed_jobs_24h;
    row.completed24h = stats.completed_jobs_24h;
    if (typeof stats.paused === 'boolean') row.paused = stats.paused;
  }));
  return [...rows.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** Reads the current figures (GET /dashboard, or /jobs/stats where it is missing) and records a sample. */
export async function takeSnapshot(): Promise<Snapshot> {
  const configured = await api<QueueSummary[]>('GET', '/queues').catch(() => [] as QueueSummary[]);
  let dashboard: Dashboard | null = null;
  try {
    dashboard = await api<Dashboard>('GET', '/dashboard');
  } catch (err) {
    if (!(err instanceof ApiError && err.missingEndpoint)) throw err;
  }
  const queues = await queueRows(dashboard, configured);
  const oldest = queues.reduce<number | null>((max, q) => (q.oldestPendingSeconds === null ? max : Math.max(max ?? 0, q.oldestPendingSeconds)), null);
  let snapshot: Snapshot;
  if (dashboard) {
    const j = dashboard.jobs;
    snapshot = {
      pending: j.pending, processing: j.processing, deadletter: j.deadletter,
      completed24h: j.completed_24h, failed24h: j.failed_24h,
      avgProcessingMs: j.avg_processing_time_ms, avgWaitMs: j.avg_wait_time_ms,
      oldestPendingSeconds: oldest, workers: { total: dashboard.workers.total, healthy: dashboard.workers.healthy },
      queues, aggregate: true,
    };
  } else {
    const stats = await api<JobStats>('GET', '/jobs/stats');
    const sum = (f: (q: QueueRow) => number | null) => queues.reduce<number | null>((acc, q) => (f(q) === null ? acc : (acc ?? 0) + (f(q) ?? 0)), null);
    snapshot = {
      pending: stats.pending, processing: stats.processing, deadletter: stats.deadletter,
      completed24h: sum((q) => q.completed24h), failed24h: sum((q) => q.failed24h),
      avgProcessingMs: null, avgWaitMs: null, oldestPendingSeconds: oldest, workers: null, queues, aggregate: false,
    };
  }
  samples.push({ t: Math.floor(Date.now() / 1000), pending: snapshot.pending, processing: snapshot.processing, deadletter: snapshot.deadletter, oldestPendingSeconds: snapshot.oldestPendingSeconds });
  changed();
  return snapshot;
}
