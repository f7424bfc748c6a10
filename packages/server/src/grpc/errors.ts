import { status as Status, type ServiceError } from '@grpc/grpc-js';
import { Metadata } from '@grpc/grpc-js';
import { SpoolError } from '@spool/protocol';
import type { Logger } from 'pino';
import { isTransientDatabaseError } from '../transient-database-error.js';

/** A gRPC status with the details text the SDK shows as the error message. */
export interface GrpcFailure {
  code: Status;
  details: string;
}

// The SDK maps status codes to its error classes (docs/compatibility.md §5). RESOURCE_EXHAUSTED
// makes it back off and retry, so it is kept for rate and plan limits; a payload
// that is too large is the caller's mistake and stays INVALID_ARGUMENT.
const BY_DOMAIN_CODE: Record<string, Status> = {
  VALIDATION_ERROR: Status.INVALID_ARGUMENT,
  BAD_REQUEST: Status.INVALID_ARGUMENT,
  PAYLOAD_TOO_LARGE: Status.INVALID_ARGUMENT,
  NOT_FOUND: Status.NOT_FOUND,
  CONFLICT: Status.FAILED_PRECONDITION,
  LEASE_EXPIRED: Status.FAILED_PRECONDITION,
  AUTHENTICATION_FAILED: Status.UNAUTHENTICATED,
  UNAUTHORIZED: Status.UNAUTHENTICATED,
  ACCESS_DENIED: Status.PERMISSION_DENIED,
  RATE_LIMIT_EXCEEDED: Status.RESOURCE_EXHAUSTED,
  LIMIT_EXCEEDED: Status.RESOURCE_EXHAUSTED,
  INTERNAL_ERROR: Status.INTERNAL,
};

// PostgreSQL SQLSTATEs that mean the input was wrong (the HTTP layer's set, plus 22021:
// a NUL character in a text value, which protobuf strings may carry and JSON bodies rarely do).
const PG_CLIENT_ERRORS = new Set(['22P02', '22003', '22007', '22008', '22001', '22021', '22023', '22P05', '23514', '54000']);

/**
 * Maps any thrown value to a gRPC status. Domain errors carry their meaning;
 * database refusals of input are INVALID_ARGUMENT; only genuine failures are
 * INTERNAL, and those are logged (never their text: it may leak internals).
 */
export function toGrpcFailure(err: unknown, logger: Logger, method: string): GrpcFailure {
  if (err instanceof SpoolError) {
    const code = BY_DOMAIN_CODE[err.code] ?? Status.UNKNOWN;
    if (code === Status.UNAUTHENTICATED) return { code, details: invalidCredentialText(err.message) };
    return { code, details: err.message };
  }
  const sqlState = (err as { code?: unknown } | null)?.code;
  if (typeof sqlState === 'string' && PG_CLIENT_ERRORS.has(sqlState)) {
    logger.info({ sqlState, method, detail: (err as Error).message }, 'database refused gRPC input');
    return { code: Status.INVALID_ARGUMENT, details: 'A value is invalid or out of range' };
  }
  if (isTransientDatabaseError(err)) {
    logger.warn({ err, method }, 'transient database error in gRPC call');
    return { code: Status.UNAVAILABLE, details: 'Database temporarily unavailable; retry shortly' };
  }
  logger.error({ err, method }, 'gRPC call failed');
  return { code: Status.INTERNAL, details: 'Internal server error' };
}

/** The contract promises "Invalid" in every UNAUTHENTICATED details text. */
function invalidCredentialText(message: string): string {
  return /invalid/i.test(message) ? message : `Invalid API key: ${message}`;
}

/** The error object grpc-js turns into a status (callback(err) or call.emit('error', err)). */
export function toServiceError(failure: GrpcFailure): Partial<ServiceError> {
  return { code: failure.code, details: failure.details, metadata: new Metadata() };
}

/** Name of a status code, e.g. "NOT_FOUND": the `code` of a ProcessJobs ErrorResponse. */
export function statusName(code: Status): string {
  return Status[code] ?? 'UNKNOWN';
}
