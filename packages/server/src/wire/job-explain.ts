import { Type } from 'typebox';
import { EXPLAIN_CODES } from '@spool/engine';

const Time = Type.String({ format: 'date-time' });
const NullableTime = Type.Union([Time, Type.Null()]);
const NullableString = Type.Union([Type.String(), Type.Null()]);
const opt = Type.Optional;

/**
 * One reason of GET /jobs/{id}/explain (extension; docs/jobs-api.md,
 * "Explain"). Besides code, message and blocking, a reason carries only the
 * details of its code; every detail is listed here so the answer is
 * serialized and documented from one schema.
 */
export const ExplainReasonSchema = Type.Object({
  code: Type.Unsafe<string>({ type: 'string', enum: [...EXPLAIN_CODES] }),
  message: Type.String({ description: 'what holds the job, in plain words, and what to do next' }),
  blocking: Type.Boolean({ description: 'false for hints (no_live_workers, queued_behind): they do not stop a claim' }),
  until: opt(Type.String({ format: 'date-time', description: 'when the reason ends by itself (scheduled, debounced, in_backoff, snoozed, rate_limited, leased)' })),
  queue_name: opt(Type.String()),
  paused_at: opt(NullableTime),
  pause_reason: opt(NullableString),
  retry_count: opt(Type.Integer()),
  max_retries: opt(Type.Integer()),
  last_error: opt(NullableString),
  completed_at: opt(NullableTime),
  expires_at: opt(Time),
  worker_id: opt(NullableString),
  cancel_requested: opt(Type.Boolean()),
  dependency_mode: opt(Type.String()),
  dependencies: opt(Type.Array(Type.Object({ job_id: Type.String(), status: NullableString }), { description: 'dependencies not completed (status null: the job was deleted)' })),
  waiting_count: opt(Type.Integer()),
  limit: opt(Type.Integer()),
  running: opt(Type.Integer()),
  concurrency_key: opt(Type.String()),
  job_key: opt(NullableString),
  rate_limit: opt(Type.Integer()),
  burst: opt(Type.Integer()),
  tokens_available: opt(Type.Number()),
  ahead: opt(Type.Integer()),
  ahead_capped: opt(Type.Boolean()),
});

export const JobExplanationSchema = Type.Object({
  job_id: Type.String(),
  queue_name: Type.String(),
  status: Type.String(),
  runnable: Type.Boolean({ description: 'a claim on the queue right now could take the job' }),
  reasons: Type.Array(ExplainReasonSchema),
  checked_at: Type.String({ format: 'date-time', description: 'the database time the facts are from' }),
});
