import { Type } from 'typebox';
import type { QueueConfigRow } from '@spool/engine';

const Timestamp = Type.String({ format: 'date-time' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

/** docs/compatibility.md §3.7 QueueConfig, plus Spool's extension fields (marked). */
export const QueueConfigSchema = Type.Object({
  id: Type.String(),
  organization_id: Type.String(),
  queue_name: Type.String(),
  max_retries: Type.Integer(),
  default_timeout: Type.Integer(),
  rate_limit: NullableInt,
  enabled: Type.Boolean(),
  settings: Type.Unknown(),
  created_at: Timestamp,
  updated_at: Timestamp,
  paused_at: Type.Union([Timestamp, Type.Null()], { description: 'extension: when the queue was paused' }),
  pause_reason: Type.Union([Type.String(), Type.Null()], { description: 'extension: reason given to pause' }),
  backoff_base_ms: Type.Integer({ description: 'extension: retry backoff base (docs/design.md §4)' }),
  backoff_max_ms: Type.Integer({ description: 'extension: retry backoff cap' }),
  backoff_jitter_ms: Type.Integer({ description: 'extension: retry backoff jitter' }),
  concurrency_limit: Type.Union([Type.Integer(), Type.Null()], { description: 'extension: most jobs processing at once across all workers; null means no limit' }),
  rate_limit_burst: Type.Union([Type.Integer(), Type.Null()], { description: 'extension: the rate limit\'s token bucket size; null means the default, a tenth of rate_limit (at least 1)' }),
  concurrency_key_limit: Type.Union([Type.Integer(), Type.Null()], { description: 'extension: most jobs processing at once per concurrency_key; null means no limit' }),
  fairness: Type.Union([Type.Literal('round_robin'), Type.Null()], { description: 'extension: claims take turns across fairness keys; null means oldest first' }),
  fairness_weights: Type.Union([Type.Array(Type.Object({ key: Type.String(), weight: Type.Integer() })), Type.Null()], { description: 'extension: jobs per turn of a fairness key (others get 1), by key' }),
  default_timeout_enforced: Type.Boolean({ description: 'extension: default_timeout was set through the config, so the server enforces it on the jobs that take it; false for the built-in default, which only the SDK enforces' }),
  configured: Type.Boolean({ description: 'extension: false when the queue has jobs but no config row; the fields are then its defaults and `id` is derived from the name' }),
});

/** docs/compatibility.md §3.7 QueueConfigSummary. */
export const QueueSummarySchema = Type.Object({
  queue_name: Type.String(),
  max_retries: Type.Integer(),
  default_timeout: Type.Integer(),
  rate_limit: NullableInt,
  enabled: Type.Boolean(),
});

export const QueueStatsSchema = Type.Object({
  queue_name: Type.String(),
  pending_jobs: Type.Integer(),
  processing_jobs: Type.Integer(),
  completed_jobs_24h: Type.Integer(),
  failed_jobs_24h: Type.Integer({ description: 'failed and dead-lettered in the last 24 h' }),
  avg_processing_time_ms: Type.Union([Type.Number(), Type.Null()]),
  max_job_age_seconds: NullableInt,
  active_workers: Type.Integer(),
  scheduled_jobs: Type.Integer({ description: 'extension: jobs waiting for their scheduled_at' }),
  deadletter_jobs_24h: Type.Integer({ description: 'extension: dead-lettered in the last 24 h' }),
  paused: Type.Boolean({ description: 'extension: the queue is paused' }),
});

export const PauseResultSchema = Type.Object({
  queue_name: Type.String(),
  paused: Type.Boolean(),
  paused_at: NullableTimestamp,
  reason: Type.Union([Type.String(), Type.Null()]),
});

export const ResumeResultSchema = Type.Object({
  queue_name: Type.String(),
  resumed: Type.Boolean(),
  paused_duration_secs: Type.Integer(),
});

export function queueConfigToWire(row: QueueConfigRow, configured = true): Record<string, unknown> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    queue_name: row.queue_name,
    max_retries: row.max_retries,
    default_timeout: row.default_timeout,
    rate_limit: row.rate_limit,
    enabled: row.enabled,
    settings: row.settings,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    paused_at: row.paused_at === null ? null : row.paused_at.toISOString(),
    pause_reason: row.pause_reason,
    backoff_base_ms: row.backoff_base_ms,
    backoff_max_ms: row.backoff_max_ms,
    backoff_jitter_ms: row.backoff_jitter_ms,
    concurrency_limit: row.concurrency_limit,
    rate_limit_burst: row.rate_limit_burst,
    concurrency_key_limit: row.concurrency_key_limit,
    fairness: row.fairness,
    fairness_weights: row.fairness_weights === null ? null : Object.entries(row.fairness_weights).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, weight]) => ({ key, weight })),
    default_timeout_enforced: row.default_timeout_set,
    configured,
  };
}

export function queueSummaryToWire(row: QueueConfigRow): Record<string, unknown> {
  return { queue_name: row.queue_name, max_retries: row.max_retries, default_timeout: row.default_timeout, rate_limit: row.rate_limit, enabled: row.enabled };
}
