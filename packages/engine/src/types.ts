import type { JobStatus } from '@spool/protocol';

/** A row of spool.jobs as node-postgres returns it. */
export interface JobRow {
  id: string;
  organization_id: string;
  queue_name: string;
  status: JobStatus;
  payload: unknown;
  result: unknown;
  retry_count: number;
  max_retries: number;
  last_error: string | null;
  created_at: Date;
  scheduled_at: Date | null;
  started_at: Date | null;
  completed_at: Date | null;
  expires_at: Date | null;
  priority: number;
  tags: Record<string, unknown> | null;
  timeout_seconds: number;
  parent_job_id: string | null;
  completion_webhook: string | null;
  assigned_worker_id: string | null;
  lease_id: string | null;
  lease_expires_at: Date | null;
  idempotency_key: string | null;
  updated_at: Date;
  workflow_id: string | null;
  workflow_key: string | null;
  dependency_mode: 'all' | 'any' | null;
  dependencies_met: boolean | null;
  cancel_requested_at: Date | null;
  concurrency_key: string | null;
  fairness_key: string | null;
  job_key: string | null;
  job_key_mode: 'dedupe' | 'debounce' | 'throttle' | 'replace' | null;
  /** Pending but waiting out a retry backoff until scheduled_at (out of the claim index). */
  in_backoff: boolean;
  /** Dependencies not yet completed (null: the job never had any). */
  dependencies_remaining: number | null;
  /** xid8 (as text) of the last transaction that added a dependency on this job. */
  dependents_xid: string | null;
  /** W3C trace context of the enqueuer (migration 027), null outside a trace. */
  traceparent: string | null;
  tracestate: string | null;
  /** The server enforces timeout_seconds: it was chosen, not the built-in default (migration 026). */
  timeout_enforced: boolean;
  /** The current (or last) attempt's deadline when enforced: its claim time + timeout_seconds. */
  deadline_at: Date | null;
}

export interface QueueConfigRow {
  id: string;
  organization_id: string;
  queue_name: string;
  max_retries: number;
  default_timeout: number;
  /** default_timeout was chosen by the operator: jobs that take it are enforced (migration 026). */
  default_timeout_set: boolean;
  rate_limit: number | null;
  enabled: boolean;
  paused_at: Date | null;
  pause_reason: string | null;
  backoff_base_ms: number;
  backoff_max_ms: number;
  backoff_jitter_ms: number;
  concurrency_limit: number | null;
  /** The rate limit's token bucket size; null = the default, a tenth of rate_limit (at least 1). */
  rate_limit_burst: number | null;
  /** Most processing jobs per concurrency_key; null = no limit. */
  concurrency_key_limit: number | null;
  /** Fair share across fairness keys (migration 029), or null. */
  fairness: 'round_robin' | null;
  /** Jobs per turn by fairness key; keys not listed get 1. */
  fairness_weights: Record<string, number> | null;
  settings: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export type WorkerStatus = 'healthy' | 'degraded' | 'draining' | 'offline';

export interface WorkerRow {
  id: string;
  organization_id: string;
  queue_name: string;
  queue_names: string[];
  hostname: string;
  worker_type: string | null;
  max_concurrency: number;
  current_jobs: number;
  status: WorkerStatus;
  last_heartbeat: Date;
  metadata: Record<string, unknown>;
  version: string | null;
  registered_at: Date;
  updated_at: Date;
}
