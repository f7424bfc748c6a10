import { Type } from 'typebox';
import type { WorkerRow } from '@spool/engine';

const Timestamp = Type.String({ format: 'date-time' });
const NullableString = Type.Union([Type.String(), Type.Null()]);

/** docs/compatibility.md §3.8 list row. */
export const WorkerSummarySchema = Type.Object({
  id: Type.String(),
  queue_name: Type.String(),
  hostname: Type.String(),
  status: Type.String(),
  current_jobs: Type.Integer(),
  max_concurrency: Type.Integer(),
  last_heartbeat: Timestamp,
});

/**
 * docs/compatibility.md §3.8 Worker, plus `created_at`, `max_concurrent_jobs` and
 * `current_job_count`: the same values under the names the official
 * Spooled dashboard reads (SDKs ignore them).
 */
export const WorkerSchema = Type.Object({
  id: Type.String(),
  organization_id: Type.String(),
  queue_name: Type.String(),
  queue_names: Type.Array(Type.String()),
  hostname: Type.String(),
  worker_type: NullableString,
  max_concurrency: Type.Integer(),
  current_jobs: Type.Integer(),
  status: Type.String(),
  last_heartbeat: Timestamp,
  metadata: Type.Unknown(),
  version: NullableString,
  registered_at: Timestamp,
  updated_at: Timestamp,
  created_at: Timestamp,
  max_concurrent_jobs: Type.Integer(),
  current_job_count: Type.Integer(),
});

export function workerSummaryToWire(row: WorkerRow): Record<string, unknown> {
  return {
    id: row.id,
    queue_name: row.queue_name,
    hostname: row.hostname,
    status: row.status,
    current_jobs: row.current_jobs,
    max_concurrency: row.max_concurrency,
    last_heartbeat: row.last_heartbeat.toISOString(),
  };
}

export function workerToWire(row: WorkerRow): Record<string, unknown> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    queue_name: row.queue_name,
    queue_names: [row.queue_name, ...row.queue_names.filter((q) => q !== row.queue_name)],
    hostname: row.hostname,
    worker_type: row.worker_type,
    max_concurrency: row.max_concurrency,
    current_jobs: row.current_jobs,
    status: row.status,
    last_heartbeat: row.last_heartbeat.toISOString(),
    metadata: row.metadata,
    version: row.version,
    registered_at: row.registered_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    created_at: row.registered_at.toISOString(),
    max_concurrent_jobs: row.max_concurrency,
    current_job_count: row.current_jobs,
  };
}
