/**
 * Errors the client throws. Every answer the server refused becomes a
 * `SpoolApiError` (or a subclass chosen by status, docs/compatibility.md §1.4) carrying
 * the status, the stable `code`, the server's request id and `details`.
 * Failures to get an answer at all are `SpoolNetworkError` / `SpoolTimeoutError`.
 */
import { fromWire } from './case.js';

export interface ApiErrorInit {
  status: number;
  code: string;
  message: string;
  requestId?: string | undefined;
  details?: unknown;
  /** The whole decoded error body, for fields outside `details` (e.g. plan-limit refusals). */
  body?: unknown;
  method?: string;
  path?: string;
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

/** The server answered with a non-2xx status. */
export class SpoolApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string | undefined;
  readonly details: unknown;
  readonly body: unknown;
  readonly method: string | undefined;
  readonly path: string | undefined;

  constructor(init: ApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.details = init.details;
    this.body = init.body;
    this.method = init.method;
    this.path = init.path;
  }
}

/** 400: the request was malformed or failed validation. */
export class ValidationError extends SpoolApiError {}
/** 401: missing, wrong, revoked or expired credential. */
export class AuthenticationError extends SpoolApiError {}
/** 403: the credential may not do this (queue restriction, plan limit). */
export class AuthorizationError extends SpoolApiError {}
/** 404: no such object in the caller's organization, or the route does not exist. */
export class NotFoundError extends SpoolApiError {}
/** 409: the object is not in a state that allows the call. */
export class ConflictError extends SpoolApiError {}
/** 409 with code LEASE_EXPIRED: the worker no longer holds the job's lease. */
export class LeaseExpiredError extends ConflictError {}
/** 413: the body or payload is larger than allowed. */
export class PayloadTooLargeError extends SpoolApiError {}
/** 429: slow down; `retryAfterMs` says for how long (from `Retry-After`). */
export class RateLimitError extends SpoolApiError {
  readonly retryAfterMs: number | undefined;
  constructor(init: ApiErrorInit) {
    super(init);
    this.retryAfterMs = init.retryAfterMs;
  }
}
/** 5xx: the server failed. */
export class ServerError extends SpoolApiError {}

/** No answer: connection refused or reset, DNS failure, TLS error. */
export class SpoolNetworkError extends Error {
  /** Node's error code when known (e.g. `ECONNREFUSED`). */
  readonly code: string | undefined;
  readonly url: string;
  constructor(message: string, url: string, options: { code?: string | undefined; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'SpoolNetworkError';
    this.code = options.code;
    this.url = url;
  }
}

/** No answer within the request timeout. */
export class SpoolTimeoutError extends Error {
  readonly timeoutMs: number;
  readonly url: string;
  constructor(url: string, timeoutMs: number) {
    super(`Request to ${url} timed out after ${timeoutMs} ms`);
    this.name = 'SpoolTimeoutError';
    this.timeoutMs = timeoutMs;
    this.url = url;
  }
}

const DEFAULT_CODES: Record<number, string> = {
  400: 'VALIDATION_ERROR',
  401: 'AUTHENTICATION_FAILED',
  403: 'ACCESS_DENIED',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  429: 'RATE_LIMIT_EXCEEDED',
};

/** Chooses the error class for a status (and code, for LEASE_EXPIRED). */
export function createApiError(init: ApiErrorInit): SpoolApiError {
  const full = { ...init, code: init.code || DEFAULT_CODES[init.status] || (init.status >= 500 ? 'INTERNAL_ERROR' : `HTTP_${init.status}`) };
  switch (init.status) {
    case 400:
      return new ValidationError(full);
    case 401:
      return new AuthenticationError(full);
    case 403:
      return new AuthorizationError(full);
    case 404:
      return new NotFoundError(full);
    case 409:
      return full.code === 'LEASE_EXPIRED' ? new LeaseExpiredError(full) : new ConflictError(full);
    case 413:
      return new PayloadTooLargeError(full);
    case 429:
      return new RateLimitError(full);
    default:
      return init.status >= 500 ? new ServerError(full) : new SpoolApiError(full);
  }
}

const MAX_TEXT_MESSAGE = 300;

/**
 * Builds the error from a decoded error body: `{ code, message, details }`,
 * `{ error, code, details }` or plain text (docs/compatibility.md §1.4).
 */
export function errorFromBody(status: number, body: unknown, extra: Omit<ApiErrorInit, 'status' | 'code' | 'message'>): SpoolApiError {
  let code = '';
  let message = '';
  let details: unknown;
  if (typeof body === 'string') {
    const text = body.trim();
    // A proxy's or another web server's error page says nothing useful and can be kilobytes long.
    if (/^<(!doctype\s+html|html)[\s>]/i.test(text)) message = `HTTP ${status} with an HTML page instead of a JSON error (is this a Spool server?)`;
    else message = text.length > MAX_TEXT_MESSAGE ? `${text.slice(0, MAX_TEXT_MESSAGE)}…` : text;
  } else if (body !== null && typeof body === 'object') {
    const record = body as Record<string, unknown>;
    if (typeof record.code === 'string') code = record.code;
    if (typeof record.message === 'string') message = record.message;
    else if (typeof record.error === 'string') message = record.error;
    details = record.details;
  }
  if (!message) message = `HTTP ${status}`;
  // `details` stays verbatim (user-facing blob); the rest of the body is camelCased like any answer.
  return createApiError({ ...extra, status, code, message, details, body: fromWire(body) });
}
