/** Wire shapes the dashboard reads (docs/compatibility.md §3). Only the fields it uses. */

export type JobStatus = 'pending' | 'scheduled' | 'processing' | 'completed' | 'failed' | 'deadletter' | 'cancelled';
export const JOB_STATUSES: JobStatus[] = ['pending', 'scheduled', 'processing', 'completed', 'failed', 'deadletter', 'cancelled'];

export interface JobSummary {
  id: string;
  queue_name: string;
  status: JobStatus;
  priority: number;
  retry_count: number;
  created_at: string;
  scheduled_at: string | null;
  started_at: string | null;
  completed_at: string | null;
}

export interface Job extends JobSummary {
  organization_id: string;
  payload: unknown;
  result: unknown;
  max_retries: number;
  last_error: string | null;
  expires_at: string | null;
  tags: Record<string, unknown> | null;
  timeout_seconds: number;
  assigned_worker_id: string | null;
  lease_id: string | null;
  lease_expires_at: string | null;
  idempotency_key: string | null;
  /** Extension: the job key it stands for and the mode of the enqueue that made or last changed it (absent on older servers). */
  job_key?: string | null;
  job_key_mode?: string | null;
  updated_at: string;
  workflow_id: string | null;
  dependency_mode: string | null;
  dependencies_met: boolean | null;
  parent_job_id: string | null;
}

export interface HistoryEntry {
  id: number;
  event: string;
  from_status: JobStatus | null;
  to_status: JobStatus | null;
  worker_id: string | null;
  lease_id: string | null;
  message: string | null;
  created_at: string;
  /** Extension: the credential behind an edit, retry or cancel through the API (absent on older servers). */
  actor?: string | null;
  /** Extension: what an edit changed; of a paced DLQ replay's retry, the replay (and what its edits changed). */
  details?: { replay_id?: string; fields?: string[]; from?: Record<string, unknown>; to?: Record<string, unknown> } | null;
}

/** Extension: a paced DLQ replay (GET /jobs/dlq/replays/{id}). */
export interface DlqReplay {
  id: string;
  status: 'running' | 'completed' | 'cancelled' | 'failed';
  queue_name: string | null;
  job_ids_count: number | null;
  per_second: number | null;
  total: number;
  done: number;
  skipped: number;
  remaining: number;
  progress: number;
  rate: number | null;
  eta_seconds: number | null;
  created_by: string;
  cancelled_by: string | null;
  error: string | null;
  created_at: string;
  finished_at: string | null;
}

/** Extension: one reason of GET /jobs/{id}/explain; details besides these vary by code. */
export interface ExplainReason {
  code: string;
  message: string;
  /** False for hints (no live workers, the place in line). */
  blocking: boolean;
  until?: string;
  [detail: string]: unknown;
}

/** Extension: why a job is not running (GET /jobs/{id}/explain). */
export interface JobExplanation {
  job_id: string;
  status: JobStatus;
  runnable: boolean;
  reasons: ExplainReason[];
  checked_at: string;
}

/** Extension: what a job's worker last reported (GET /jobs/{id}/progress). */
export interface JobProgress {
  percent: number | null;
  message: string | null;
  metadata: unknown;
  updated_at: string;
}

/** Extension: one line of a job's log (GET /jobs/{id}/logs). */
export interface JobLogLine {
  seq: number;
  at: string;
  line: string;
}

export interface JobStats {
  pending: number;
  scheduled: number;
  processing: number;
  completed: number;
  failed: number;
  deadletter: number;
  cancelled: number;
  total: number;
}

export interface QueueSummary {
  queue_name: string;
  max_retries: number;
  default_timeout: number;
  rate_limit: number | null;
  enabled: boolean;
}

export interface QueueConfig extends QueueSummary {
  settings: unknown;
  paused_at?: string | null;
  pause_reason?: string | null;
  backoff_base_ms?: number;
  backoff_max_ms?: number;
  backoff_jitter_ms?: number;
  concurrency_limit?: number | null;
  rate_limit_burst?: number | null;
  concurrency_key_limit?: number | null;
  fairness?: 'round_robin' | null;
  fairness_weights?: { key: string; weight: number }[] | null;
}

export interface QueueStats {
  queue_name: string;
  pending_jobs: number;
  processing_jobs: number;
  completed_jobs_24h: number;
  failed_jobs_24h: number;
  avg_processing_time_ms: number | null;
  max_job_age_seconds: number | null;
  active_workers: number;
  scheduled_jobs?: number;
  paused?: boolean;
}

export interface Dashboard {
  system: { version: string; uptime_seconds: number; environment: string };
  jobs: { total: number; pending: number; processing: number; completed_24h: number; failed_24h: number; deadletter: number; avg_wait_time_ms: number | null; avg_processing_time_ms: number | null };
  queues: { name: string; pending: number; processing: number; paused: boolean }[];
  workers: { total: number; healthy: number; unhealthy: number };
  recent_activity: { jobs_created_1h: number; jobs_completed_1h: number; jobs_failed_1h: number };
}

export interface WorkerSummary {
  id: string;
  queue_name: string;
  hostname: string;
  status: 'healthy' | 'degraded' | 'draining' | 'offline';
  current_jobs: number;
  max_concurrency: number;
  last_heartbeat: string | null;
}

export interface Worker extends WorkerSummary {
  queue_names?: string[] | null;
  worker_type: string | null;
  metadata: unknown;
  version: string | null;
  registered_at: string;
}

export interface Schedule {
  id: string;
  name: string;
  description: string | null;
  cron_expression: string;
  timezone: string;
  queue_name: string;
  payload_template: unknown;
  priority: number;
  max_retries: number;
  timeout_seconds: number;
  is_active: boolean;
  last_run_at: string | null;
  next_run_at: string | null;
  run_count: number;
  created_at: string;
}

export interface ScheduleRun {
  id: string;
  schedule_id: string;
  job_id: string | null;
  status: string;
  error_message: string | null;
  started_at: string;
  completed_at: string | null;
}

export interface Workflow {
  id: string;
  name: string;
  description: string | null;
  status: 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
  total_jobs: number;
  completed_jobs: number;
  failed_jobs: number;
  progress_percent: number;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
}

export interface WorkflowJob {
  id: string;
  key: string;
  queue_name: string;
  status: JobStatus;
  depends_on: string[];
  error: string | null;
  attempt: number;
  /** Spool extension: per depends_on entry (by job id), what that dependency's final failure does to this job. */
  on_parent_failure?: Record<string, 'block' | 'cancel' | 'continue'>;
}

export interface ApiKey {
  id: string;
  name: string;
  queues: string[];
  /** admin, producer, worker or read_only (Spool extension). */
  role: string;
  rate_limit: number | null;
  is_active: boolean;
  created_at: string;
  last_used: string | null;
  expires_at: string | null;
}

export interface Webhook {
  id: string;
  name: string;
  url: string;
  events: string[];
  enabled: boolean;
  failure_count: number;
  last_triggered_at: string | null;
  last_status: string | null;
  created_at: string;
}

export interface Delivery {
  id: string;
  event: string;
  status: string;
  status_code: number | null;
  error: string | null;
  attempts: number;
  created_at: string;
  delivered_at: string | null;
  response_body: string | null;
}

export const WEBHOOK_EVENTS = [
  'job.created', 'job.started', 'job.completed', 'job.failed', 'job.cancelled',
  'queue.paused', 'queue.resumed', 'worker.registered', 'worker.deregistered', 'schedule.triggered',
];

/** One bucket of GET /stats/timeseries (an extension). */
export interface ActivityPoint {
  t: string;
  enqueued: number;
  started: number;
  completed: number;
  failed: number;
  retried: number;
  deadlettered: number;
  expired: number;
  wait_p50_ms: number | null;
  wait_p95_ms: number | null;
  wait_p99_ms: number | null;
  run_p50_ms: number | null;
  run_p95_ms: number | null;
  run_p99_ms: number | null;
}

export interface ActivitySeries {
  step: number;
  from: string;
  to: string;
  queue_name: string | null;
  points: ActivityPoint[];
}
