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
  defaultTimeout?: number | null;
  rateLimit?: number | null;
  enabled?: boolean | null;
  settings?: Record<string, unknown> | null;
  backoffBaseMs?: number | null;
  backoffMaxMs?: number | null;
  backoffJitterMs?: number | null;
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
  ]);
  return rows[0]!;
}
