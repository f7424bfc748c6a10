import { Type } from 'typebox';
import type { JobRow } from '@spool/engine';

const Timestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const NullableString = Type.Union([Type.String(), Type.Null()]);

/** The contract's Job object (docs/compatibility.md §3.3): every key present, unset ones null. */
export const JobSchema = Type.Object({
  id: Type.String(),
  organization_id: Type.String(),
  queue_name: Type.String(),
  status: Type.String(),
  payload: Type.Unknown(),
  result: Type.Unknown(),
  retry_count: Type.Integer(),
  max_retries: Type.Integer(),
  last_error: NullableString,
  created_at: Type.String({ format: 'date-time' }),
  scheduled_at: Timestamp,
  started_at: Timestamp,
  completed_at: Timestamp,
  expires_at: Timestamp,
  priority: Type.Integer(),
  tags: Type.Unknown(),
  timeout_seconds: Type.Integer(),
  parent_job_id: NullableString,
  completion_webhook: NullableString,
  assigned_worker_id: NullableString,
  lease_id: NullableString,
  lease_expires_at: Timestamp,
  idempotency_key: NullableString,
  updated_at: Type.String({ format: 'date-time' }),
  workflow_id: NullableString,
  dependency_mode: NullableString,
  dependencies_met: Type.Union([Type.Boolean(), Type.Null()]),
  cancel_requested: Type.Boolean({ description: 'extension: cancellation was requested while the job runs' }),
  concurrency_key: Type.Union([Type.String(), Type.Null()], { description: 'extension: the key whose processing jobs the queue\'s concurrency_key_limit caps' }),
  fairness_key: Type.Union([Type.String(), Type.Null()], { description: 'extension: the key whose turn the job waits for in a queue with fair share' }),
  job_key: Type.Union([Type.String(), Type.Null()], { description: 'extension: the job_key the job stands for (docs/jobs-api.md, "Job keys")' }),
  job_key_mode: Type.Union([Type.String(), Type.Null()], { description: 'extension: the mode of the job_key\'s latest enqueue that created or changed the job' }),
  traceparent: Type.Union([Type.String(), Type.Null()], { description: 'extension: the W3C traceparent the job was enqueued in (the server\'s enqueue span while it exports traces); a worker\'s span for the job links to it. Null outside a trace.' }),
  tracestate: Type.Union([Type.String(), Type.Null()], { description: 'extension: the W3C tracestate going with traceparent' }),
  timeout_enforced: Type.Boolean({ description: 'extension: the server enforces timeout_seconds (it was set on the job, its schedule or its queue\'s config); false for the built-in default, which only the SDK enforces' }),
  deadline_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'extension: while processing with an enforced timeout, when this attempt times out (claim time + timeout_seconds), else null; the lease never outlives it',
  }),
});

/** List rows (docs/compatibility.md §3.3 JobSummary). */
export const JobSummarySchema = Type.Object({
  id: Type.String(),
  queue_name: Type.String(),
  status: Type.String(),
  priority: Type.Integer(),
  retry_count: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  scheduled_at: Timestamp,
  started_at: Timestamp,
  completed_at: Timestamp,
  max_retries: Type.Integer({ description: 'extension: retries allowed (the official Spooled dashboard shows attempt / max_retries)' }),
  attempt: Type.Integer({ description: 'extension: the same as retry_count, under the name the official Spooled dashboard reads' }),
});

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export function jobToWire(row: JobRow): Record<string, unknown> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    queue_name: row.queue_name,
    status: row.status,
    payload: row.payload,
    result: row.result ?? null,
    retry_count: row.retry_count,
    max_retries: row.max_retries,
    last_error: row.last_error,
    created_at: row.created_at.toISOString(),
    scheduled_at: iso(row.scheduled_at),
    started_at: iso(row.started_at),
    completed_at: iso(row.completed_at),
    expires_at: iso(row.expires_at),
    priority: row.priority,
    tags: row.tags ?? null,
    timeout_seconds: row.timeout_seconds,
    parent_job_id: row.parent_job_id,
    completion_webhook: row.completion_webhook,
    assigned_worker_id: row.assigned_worker_id,
    lease_id: row.lease_id,
    lease_expires_at: iso(row.lease_expires_at),
    idempotency_key: row.idempotency_key,
    updated_at: row.updated_at.toISOString(),
    workflow_id: row.workflow_id,
    dependency_mode: row.dependency_mode,
    dependencies_met: row.dependencies_met,
    cancel_requested: row.cancel_requested_at !== null,
    concurrency_key: row.concurrency_key,
    fairness_key: row.fairness_key,
    job_key: row.job_key,
    job_key_mode: row.job_key_mode,
    traceparent: row.traceparent ?? null,
    tracestate: row.tracestate ?? null,
    timeout_enforced: row.timeout_enforced,
    deadline_at: row.status === 'processing' ? iso(row.deadline_at) : null,
  };
}

export function jobSummaryToWire(row: Pick<JobRow, 'id' | 'queue_name' | 'status' | 'priority' | 'retry_count' | 'max_retries' | 'created_at' | 'scheduled_at' | 'started_at' | 'completed_at'>): Record<string, unknown> {
  return {
    id: row.id,
    queue_name: row.queue_name,
    status: row.status,
    priority: row.priority,
    retry_count: row.retry_count,
    created_at: row.created_at.toISOString(),
    scheduled_at: iso(row.scheduled_at),
    started_at: iso(row.started_at),
    completed_at: iso(row.completed_at),
    max_retries: row.max_retries,
    attempt: row.retry_count,
  };
}
