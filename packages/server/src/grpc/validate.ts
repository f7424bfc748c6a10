import { LIMITS, QUEUE_NAME_PATTERN, ValidationError, clamp } from '@spool/protocol';

/*
 * Request checks for the gRPC surface. The details texts are part of the
 * contract (docs/compatibility.md §5): clients match "Queue name", "alphanumeric" and
 * "Worker ID is required".
 */

/** Lease the contract gives a worker that asks for none (the later backend's default). */
export const GRPC_DEFAULT_LEASE_SECONDS = 300;

const WORKER_ID_MAX = 255;

/** Throws unless `name` is a valid queue name (docs/compatibility.md §1.8). */
export function checkQueueName(name: string): string {
  if (name.length === 0) throw new ValidationError('Queue name is required', { field: 'queue_name' });
  if (name.length > LIMITS.queueNameMax) {
    throw new ValidationError(`Queue name must be at most ${LIMITS.queueNameMax} characters`, { field: 'queue_name' });
  }
  if (!QUEUE_NAME_PATTERN.test(name)) {
    throw new ValidationError("Queue name must be alphanumeric (letters, digits, '-', '_', '.') and must not start with '.' or '-'", { field: 'queue_name' });
  }
  return name;
}

/** Throws unless a worker id was sent (any non-empty string up to 255 characters). */
export function checkWorkerId(workerId: string): string {
  if (workerId.length === 0) throw new ValidationError('Worker ID is required', { field: 'worker_id' });
  if (workerId.length > WORKER_ID_MAX) throw new ValidationError(`Worker ID must be at most ${WORKER_ID_MAX} characters`, { field: 'worker_id' });
  return workerId;
}

/** Lease or extension seconds: 0 or less means the default; otherwise clamped to 5…3600. */
export function leaseSeconds(requested: number): number {
  if (!Number.isFinite(requested) || requested <= 0) return GRPC_DEFAULT_LEASE_SECONDS;
  return clamp(Math.trunc(requested), LIMITS.leaseSecondsMin, LIMITS.leaseSecondsMax);
}

/** Batch size: 0 or less means 1; at most 100. */
export function batchSize(requested: number): number {
  if (!Number.isFinite(requested) || requested <= 0) return 1;
  return clamp(Math.trunc(requested), 1, LIMITS.claimLimitMax);
}

/** An integer field where 0 (proto3's "unset") means the server default. */
export function intOrDefault<F extends number | undefined>(value: number, fallback: F, field: string, min: number, max: number): number | F {
  if (value === 0) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${field} must be between ${min} and ${max}`, { field });
  }
  return value;
}

/** "" (proto3's "unset") → null. */
export function optionalString(value: string | null | undefined): string | null {
  return value ? value : null;
}
