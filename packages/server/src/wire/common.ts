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
