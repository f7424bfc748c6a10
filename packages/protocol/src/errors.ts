/**
 * Domain errors: one small class each with a stable `code` from the wire
 * contract (docs/compatibility.md §1.4). The HTTP layer maps `status` and `code` to the
 * response; nothing else needs to know about HTTP.
 */
export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'BAD_REQUEST'
  | 'AUTHENTICATION_FAILED'
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'LEASE_EXPIRED'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMIT_EXCEEDED'
  | 'LIMIT_EXCEEDED'
  | 'INTERNAL_ERROR';

export class SpoolError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, status: number, message: string, options?: { details?: Record<string, unknown>; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.details = options?.details;
  }
}

export class ValidationError extends SpoolError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('VALIDATION_ERROR', 400, message, { details });
  }
}

export class NotFoundError extends SpoolError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('NOT_FOUND', 404, message, { details });
  }
}

export class ConflictError extends SpoolError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('CONFLICT', 409, message, { details });
  }
}

/** The caller's lease on a job is no longer the current one: it lost the job. */
export class LeaseExpiredError extends SpoolError {
  constructor(message = 'Lease expired: the job was re-leased or its lease changed', details?: Record<string, unknown>) {
    super('LEASE_EXPIRED', 409, message, { details });
  }
}

export class AuthenticationError extends SpoolError {
  constructor(message = 'Authentication failed') {
    super('AUTHENTICATION_FAILED', 401, message);
  }
}

export class AccessDeniedError extends SpoolError {
  constructor(message = 'Access denied') {
    super('ACCESS_DENIED', 403, message);
  }
}

export class PayloadTooLargeError extends SpoolError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('PAYLOAD_TOO_LARGE', 413, message, { details });
  }
}

export class RateLimitError extends SpoolError {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number, message = 'Rate limit exceeded') {
    super('RATE_LIMIT_EXCEEDED', 429, message, { details: { retry_after: retryAfterSeconds } });
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export class LimitExceededError extends SpoolError {
  constructor(message: string, details: Record<string, unknown>) {
    super('LIMIT_EXCEEDED', 403, message, { details });
  }
}
