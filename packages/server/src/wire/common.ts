import { Type } from 'typebox';
import { LIMITS } from '@spool/protocol';

/** Shared field schemas (docs/compatibility.md §1.8). Messages from these name the field. */
export const QueueName = Type.String({ minLength: 1, maxLength: LIMITS.queueNameMax, pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]*$' });
export const Priority = Type.Integer({ minimum: LIMITS.priorityMin, maximum: LIMITS.priorityMax });
export const MaxRetries = Type.Integer({ minimum: LIMITS.maxRetriesMin, maximum: LIMITS.maxRetriesMax });
export const TimeoutSeconds = Type.Integer({ minimum: LIMITS.timeoutSecondsMin, maximum: LIMITS.timeoutSecondsMax });
export const IdempotencyKey = Type.String({ minLength: 1, maxLength: LIMITS.idempotencyKeyMax });
/** A job's concurrency_key (extension): jobs with one count against the queue's concurrency_key_limit. */
export const ConcurrencyKey = Type.String({ minLength: 1, maxLength: LIMITS.concurrencyKeyMax });
/** A job's fairness_key (extension): the key whose turn it waits for in a queue with fair share. */
export const FairnessKey = Type.String({ minLength: 1, maxLength: LIMITS.concurrencyKeyMax });
/** A job's key policy (extension; docs/jobs-api.md, "Job keys"). Rules between the fields are checked in code (checkJobLimits). */
export const JobKeyField = Type.Object({
  key: Type.String({ minLength: 1, maxLength: LIMITS.jobKeyMax, description: 'the key, unique in meaning per queue of the organization' }),
  mode: Type.Union([Type.Literal('dedupe'), Type.Literal('debounce'), Type.Literal('throttle'), Type.Literal('replace')], {
    description: 'dedupe: a waiting or running job of the key is returned; debounce: the waiting job takes the new payload and runs window_secs after the latest enqueue (at most max_wait_secs after the first); throttle: at most one job per window_secs; replace: the waiting job takes the new payload and options, a running one is followed by a new job',
  }),
  window_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: LIMITS.jobKeyWindowSecsMax, description: 'debounce and throttle (required there)' })),
  max_wait_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: LIMITS.jobKeyWindowSecsMax, description: 'debounce only: the latest run time, counted from the first enqueue; at least window_secs' })),
}, { additionalProperties: false, description: 'extension: a key policy for dedupe, debounce, throttle or replace (docs/jobs-api.md, "Job keys")' });
export const KeyOutcomeField = Type.Union(
  [Type.Literal('created'), Type.Literal('deduplicated'), Type.Literal('debounced'), Type.Literal('throttled'), Type.Literal('replaced')],
  { description: 'extension, with job_key: what the enqueue did; the id is the job that stands for the key' },
);
export const DateTime = Type.String({ format: 'date-time' });
export const Tags = Type.Record(Type.String(), Type.Unknown());
export const IdParams = Type.Object({ id: Type.String() });

export const ErrorSchema = Type.Object({
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
  details: Type.Unknown(),
});

/** Size of a JSON value as stored, in bytes. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');
}

export function nullable<T extends Parameters<typeof Type.Union>[0][number]>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}
