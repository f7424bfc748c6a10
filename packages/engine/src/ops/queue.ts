import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import type { QueueConfigRow } from '../types.js';

const pause = sqlFile(import.meta.url, './queue-pause.sql');
const resume = sqlFile(import.meta.url, './queue-resume.sql');
const upsert = sqlFile(import.meta.url, './queue-config-upsert.sql');

/** Pauses a queue: claims on it return nothing until it is resumed. */
export async function queuePause(db: Queryable, organizationId: string, queueName: string, reason: string | null): Promise<QueueConfigRow> {
  const rows = await run<QueueConfigRow>(db, pause, [organizationId, queueName, reason]);
  return rows[0]!;
}

/** Resumes a queue and wakes its waiting claimers; null when the queue has no config. */
export async function queueResume(db: Queryable, organizationId: string, queueName: string): Promise<(QueueConfigRow & { paused_duration_secs: number }) | null> {
  const rows = await run<QueueConfigRow & { paused_duration_secs: number }>(db, resume, [organizationId, queueName]);
  return rows[0] ?? null;
}

export interface QueueConfigPatch {
  maxRetries?: number | null;
  /** undefined keeps it; null goes back to the built-in default (not enforced); a number is chosen, and enforced. */
  defaultTimeout?: number | null;
  /** Most jobs started per second across all workers; null removes the limit, undefined keeps it. */
  rateLimit?: number | null;
  /** The rate limit's token bucket size; null restores the default (a tenth of a second's worth), undefined keeps it. */
  rateLimitBurst?: number | null;
  /** Most processing jobs per concurrency_key; null removes the limit, undefined keeps it. */
  concurrencyKeyLimit?: number | null;
  /** Fair share across fairness keys; null turns it off, undefined keeps it. */
  fairness?: 'round_robin' | null;
  /** Jobs per turn of each fairness key (default 1); null clears them, undefined keeps them. */
  fairnessWeights?: Record<string, number> | null;
  enabled?: boolean | null;
  settings?: Record<string, unknown> | null;
  backoffBaseMs?: number | null;
  backoffMaxMs?: number | null;
  backoffJitterMs?: number | null;
  /** Most jobs processing at once across all workers; null removes the limit, undefined keeps it. */
  concurrencyLimit?: number | null;
}

/** Creates or updates a queue's config; absent fields keep their value (or default). */
export async function queueConfigUpsert(db: Queryable, organizationId: string, queueName: string, patch: QueueConfigPatch): Promise<QueueConfigRow> {
  const rows = await run<QueueConfigRow>(db, upsert, [
    organizationId,
    queueName,
    patch.maxRetries ?? null,
    patch.defaultTimeout ?? null,
    patch.rateLimit ?? null,
    patch.enabled ?? null,
    patch.settings == null ? null : JSON.stringify(patch.settings),
    patch.backoffBaseMs ?? null,
    patch.backoffMaxMs ?? null,
    patch.backoffJitterMs ?? null,
    patch.concurrencyLimit ?? null,
    patch.concurrencyLimit === null,
    patch.rateLimitBurst ?? null,
    patch.rateLimit === null,
    patch.rateLimitBurst === null,
    patch.concurrencyKeyLimit ?? null,
    patch.concurrencyKeyLimit === null,
    patch.defaultTimeout === null,
    patch.fairness ?? null,
    patch.fairness === null,
    patch.fairnessWeights == null ? null : JSON.stringify(patch.fairnessWeights),
    patch.fairnessWeights === null,
  ]);
  return rows[0]!;
}

const list = sqlFile(import.meta.url, './queue-list.sql');
const get = sqlFile(import.meta.url, './queue-get.sql');
const remove = sqlFile(import.meta.url, './queue-delete.sql');
const stats = sqlFile(import.meta.url, './queue-stats.sql');

/** Configured queues of the organization, by name. */
export async function queueList(db: Queryable, organizationId: string, limit = 100, queues: string[] | null = null): Promise<QueueConfigRow[]> {
  return run<QueueConfigRow>(db, list, [organizationId, limit, queues]);
}

/** A queue's config, or null when it has none. */
export async function queueGet(db: Queryable, organizationId: string, queueName: string): Promise<QueueConfigRow | null> {
  const rows = await run<QueueConfigRow>(db, get, [organizationId, queueName]);
  return rows[0] ?? null;
}

const getEffective = sqlFile(import.meta.url, './queue-get-effective.sql');

/**
 * A queue's config; for a queue that has jobs but no config row, its
 * defaults (`configured: false`, a stable id, nothing written); null when
 * the queue has neither.
 */
export async function queueGetEffective(db: Queryable, organizationId: string, queueName: string): Promise<(QueueConfigRow & { configured: boolean }) | null> {
  const rows = await run<QueueConfigRow & { configured: boolean }>(db, getEffective, [organizationId, queueName]);
  return rows[0] ?? null;
}

/** `deleted`, or why not: no config row (`not_found`) or unfinished jobs (`busy`). Jobs are never deleted. */
export async function queueDelete(db: Queryable, organizationId: string, queueName: string): Promise<'deleted' | 'not_found' | 'busy'> {
  const rows = await run<{ existed: boolean; busy: boolean; deleted: boolean }>(db, remove, [organizationId, queueName]);
  const row = rows[0]!;
  if (row.deleted) return 'deleted';
  return row.existed ? 'busy' : 'not_found';
}

export interface QueueStatsRow {
  pending: number;
  scheduled: number;
  processing: number;
  completed_24h: number;
  failed_24h: number;
  deadletter_24h: number;
  avg_processing_ms: number | null;
  max_job_age_seconds: number | null;
  active_workers: number;
  /** null when the queue has no config. */
  paused: boolean | null;
}

/** Counts for one queue; zeros for a queue nobody has used. */
export async function queueStats(db: Queryable, organizationId: string, queueName: string): Promise<QueueStatsRow> {
  const rows = await run<QueueStatsRow>(db, stats, [organizationId, queueName]);
  return rows[0]!;
}
