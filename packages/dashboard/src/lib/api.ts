import { endSession, getSession } from './session';

/** A failed API call: the HTTP status and the contract's error body (docs/compatibility.md §1.4). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The server does not have this endpoint at all (its router answered, not a handler). */
  get missingEndpoint(): boolean {
    return this.status === 404 && /^Route [A-Z]+ /.test(this.message);
  }
}

export const API_BASE = '/api/v1';

interface CallOptions {
  body?: unknown;
  /** Send no credentials (sign-in). */
  anonymous?: boolean;
  /** Don't end the session on 401 (sign-in, sign-out). */
  keepSessionOn401?: boolean;
  signal?: AbortSignal;
}

async function parse(response: Response): Promise<unknown> {
  if (response.status === 204) return undefined;
  const text = await response.text();
  if (!text) return undefined;
  if ((response.headers.get('content-type') ?? '').includes('application/json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

function toError(status: number, body: unknown): ApiError {
  if (body && typeof body === 'object') {
    const b = body as { code?: unknown; message?: unknown; error?: unknown; details?: unknown };
    const message = typeof b.message === 'string' ? b.message : typeof b.error === 'string' ? b.error : `HTTP ${status}`;
    return new ApiError(status, typeof b.code === 'string' ? b.code : 'ERROR', message, b.details ?? null);
  }
  return new ApiError(status, 'ERROR', typeof body === 'string' && body ? body : `HTTP ${status}`);
}

/**
 * Calls the REST API with the session's bearer token. A 401 on an
 * authenticated call means the key was revoked or the session expired: the
 * session ends and the app shows the sign-in page.
 */
export async function api<T = unknown>(method: string, path: string, options: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const session = getSession();
  if (!options.anonymous && session) headers.authorization = `Bearer ${session.token}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  } else if (method !== 'GET' && method !== 'HEAD') {
    // Body-less POSTs are fine for Spool, but an explicit {} keeps proxies honest.
    headers['content-type'] = 'application/json';
    body = '{}';
  }
  let response: Response;
  try {
    response = await fetch(`${API_BASE}${path}`, { method, headers, body, signal: options.signal });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'NETWORK', 'Cannot reach the Spool server');
  }
  const parsed = await parse(response);
  if (response.ok) return parsed as T;
  const error = toError(response.status, parsed);
  if (response.status === 401 && !options.anonymous && !options.keepSessionOn401 && session) {
    endSession(`Your session ended: ${error.message}. Sign in again with a valid API key.`);
  }
  throw error;
}

/** Builds `?a=1&b=2` from the defined, non-empty values. */
export function query(params: Record<string, string | number | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined || value === '') continue;
    search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
