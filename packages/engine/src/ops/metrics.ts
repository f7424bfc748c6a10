import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const queueGauges = sqlFile(import.meta.url, './metrics-queue-gauges.sql');
const historyCounts = sqlFile(import.meta.url, './metrics-history-counts.sql');
const historyHead = sqlFile(import.meta.url, './metrics-history-head.sql');
const workerCounts = sqlFile(import.meta.url, './metrics-worker-counts.sql');

export type GaugeStatus = 'pending' | 'scheduled' | 'processing' | 'deadletter';

export interface QueueGaugeRow {
  organization_id: string;
  queue_name: string;
  status: GaugeStatus;
  count: number;
  /** pending: when the oldest due job became runnable; null otherwise. */
  oldest: Date | null;
}

export interface HistoryCountRow {
  organization_id: string;
  queue_name: string;
  event: string;
  /** '' when the event has no target status. */
  to_status: string;
  count: number;
}

/**
 * Unfinished jobs and dead letters per organization and queue (every queue
 * that has any job, with zeros). Index probes per queue plus index-only
 * counts: cost O(queues × log n + unfinished jobs), not O(table).
 */
export async function metricsQueueGauges(db: Queryable): Promise<QueueGaugeRow[]> {
  return run<QueueGaugeRow>(db, queueGauges, []);
}

/** The newest job_history id (0 when empty). */
export async function metricsHistoryHead(db: Queryable): Promise<number> {
  const rows = await run<{ head: number }>(db, historyHead, []);
  return rows[0]?.head ?? 0;
}

/** Transition counts with afterId < id <= uptoId, grouped by queue, event and target status. */
export async function metricsHistoryCounts(db: Queryable, afterId: number, uptoId: number): Promise<HistoryCountRow[]> {
  if (uptoId <= afterId) return [];
  return run<HistoryCountRow>(db, historyCounts, [afterId, uptoId]);
}

/** Registered workers per status. */
export async function metricsWorkerCounts(db: Queryable): Promise<{ status: string; count: number }[]> {
  return run<{ status: string; count: number }>(db, workerCounts, []);
}
