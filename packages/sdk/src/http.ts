/**
 * The HTTP transport under every resource: builds the request, converts
 * keys, maps refusals to typed errors and retries what is safe to retry.
 *
 * Retry rules (docs/compatibility.md §1.4):
 *  - 429 is retried for every method: the server refused before doing anything.
 *  - 5xx, timeouts and dropped connections are retried only for idempotent
 *    calls (GET/PUT/DELETE, or a POST the caller marks idempotent, e.g. one
 *    carrying an idempotency key): a POST that reached the server may have
 *    taken effect.
 *  - A connection that was never established (ECONNREFUSED, DNS) is retried
 *    for every method: the request never left.
 */
import { fromWire, toWire } from './case.js';
import { errorFromBody, SpoolNetworkError, SpoolTimeoutError } from './errors.js';
import { nodeRequest, type WireResponse } from './node-request.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RetryOptions {
  /** Retries after the first attempt. Default 3. */
  maxRetries?: number;
  /** First backoff; doubles per attempt, with jitter. Default 500 ms. */
  baseDelayMs?: number;
  /** Cap of one backoff. Default 10 s. */
  maxDelayMs?: number;
  /** Cap of a server-requested `Retry-After` wait. Default 30 s. */
  maxRetryAfterMs?: number;
}

export interface TransportOptions {
  /** Server base URL. Default `http://localhost:8080`. */
  baseUrl?: string;
  /** API key (`sk_…`) or access token (JWT), sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** `X-Admin-Key` for `/api/v1/admin/*`. */
  adminKey?: string;
  /** Per-request timeout. Default 30 s. */
  timeoutMs?: number;
  /** Retry policy, or `false` to never retry. */
  retry?: RetryOptions | false;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /**
   * A fetch implementation (e.g. undici's). Default: JSON calls go through
   * Node's http client with keep-alive (cheaper per request), streams
   * through the global fetch.
   */
  fetch?: typeof fetch;
}

/** Per-call options every client method accepts last. */
export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface RequestSpec extends CallOptions {
  method: HttpMethod;
  /** Path under the base URL, starting with `/`. */
  path: string;
  query?: Record<string, unknown>;
  /** camelCase body; converted to snake_case (blob values untouched). */
  body?: unknown;
  /** Overrides the method's default idempotency (GET/PUT/DELETE are idempotent). */
  idempotent?: boolean;
  /** Send `X-Admin-Key`. */
  admin?: boolean;
  /** Return the decoded body without camelCase conversion. */
  raw?: boolean;
  /** Headers of this request only (e.g. W3C trace context). */
  headers?: { [name: string]: string | undefined };
}

const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);
const SDK_VERSION = '0.1.0';

/** Reads `Retry-After` (seconds or an HTTP date) as milliseconds. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function causeCode(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    const errors = (current as { errors?: unknown[] }).errors;
    if (Array.isArray(errors) && errors.length > 0) current = errors[0];
    else current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export class Transport {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #adminKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #retry: Required<RetryOptions>;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;
  readonly #customFetch: boolean;

  constructor(options: TransportOptions = {}) {
    this.baseUrl = (options.baseUrl ?? 'http://localhost:8080').replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#adminKey = options.adminKey;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    const retry = options.retry === false ? { maxRetries: 0 } : (options.retry ?? {});
    this.#retry = {
      maxRetries: retry.maxRetries ?? 3,
      baseDelayMs: retry.baseDelayMs ?? 500,
      maxDelayMs: retry.maxDelayMs ?? 10_000,
      maxRetryAfterMs: retry.maxRetryAfterMs ?? 30_000,
    };
    this.#headers = options.headers ?? {};
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#customFetch = options.fetch !== undefined;
  }

  /** Sends the request (with retries) and returns the camelCased body, or `undefined` for an empty one. */
  async request<T>(spec: RequestSpec): Promise<T> {
    const idempotent = spec.idempotent ?? (spec.method !== 'POST' && spec.method !== 'PATCH');
    for (let attempt = 0; ; attempt++) {
      const canRetry = attempt < this.#retry.maxRetries;
      let response: WireResponse;
      let body: unknown;
      try {
        ({ response, body } = await this.#once(spec));
      } catch (err) {
        const retryable = err instanceof SpoolTimeoutError || (err instanceof SpoolNetworkError && (idempotent || NEVER_CONNECTED.has(err.code ?? '')));
        if (!canRetry || !retryable) throw err;
        await sleep(this.#backoff(attempt), spec.signal);
        continue;
      }
      if (response.ok) {
        if (!spec.raw && typeof body === 'string' && (response.headers.get('content-type') ?? '').includes('text/html')) {
          throw new SpoolNetworkError(`${spec.method} ${spec.path} answered with an HTML page, not JSON: is ${this.baseUrl} a Spool server?`, this.baseUrl + spec.path);
        }
        return (spec.raw ? body : fromWire(body)) as T;
      }
      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
      const error = errorFromBody(response.status, body, {
        requestId: response.headers.get('x-request-id') ?? undefined,
        method: spec.method,
        path: spec.path,
        retryAfterMs,
      });
      if (!canRetry || !this.#shouldRetryStatus(response.status, idempotent)) throw error;
      const wait = retryAfterMs !== undefined ? Math.min(retryAfterMs, this.#retry.maxRetryAfterMs) : this.#backoff(attempt);
      await sleep(wait, spec.signal);
    }
  }

  /**
   * Opens a streaming response (Server-Sent Events) and returns it unread.
   * No timeout once the headers arrived (`timeoutMs` bounds only the wait for
   * them); not retried: long-lived streams reconnect themselves. A refusal
   * throws the same typed errors as `request()`.
   */
  async open(spec: RequestSpec): Promise<Response> {
    const url = this.#url(spec.path, spec.query);
    const timeoutMs = spec.timeoutMs ?? this.#timeoutMs;
    const connect = new AbortController();
    const timer = setTimeout(() => connect.abort(new SpoolTimeoutError(url, timeoutMs)), timeoutMs);
    const signal = spec.signal ? AbortSignal.any([spec.signal, connect.signal]) : connect.signal;
    let response: Response;
    try {
      response = await this.#fetch(url, { method: spec.method, headers: { ...this.#requestHeaders(spec, false), accept: 'text/event-stream' }, signal });
    } catch (err) {
      if (spec.signal?.aborted) throw spec.signal.reason;
      if (connect.signal.aborted) throw connect.signal.reason;
      const code = causeCode(err);
      throw new SpoolNetworkError(`Cannot reach ${this.baseUrl}: ${code ?? String(err)}`, url, { code, cause: err });
    } finally {
      clearTimeout(timer);
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => '');
    let body: unknown = text || undefined;
    try {
      if ((response.headers.get('content-type') ?? '').includes('application/json') && text) body = JSON.parse(text);
    } catch {
      // keep the text
    }
    throw errorFromBody(response.status, body, {
      requestId: response.headers.get('x-request-id') ?? undefined,
      method: spec.method,
      path: spec.path,
      retryAfterMs: parseRetryAfter(response.headers.get('retry-after')),
    });
  }

  #shouldRetryStatus(status: number, idempotent: boolean): boolean {
    if (status === 429) return true;
    return status >= 500 && idempotent;
  }

  /** Exponential backoff with "equal jitter": half fixed, half random, so retries spread out. */
  #backoff(attempt: number): number {
    const ceiling = Math.min(this.#retry.maxDelayMs, this.#retry.baseDelayMs * 2 ** attempt);
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  #url(path: string, query: Record<string, unknown> | undefined): string {
    const url = new URL(this.baseUrl + path);
    const wire = (query ? toWire(query) : {}) as Record<string, unknown>;
    for (const [key, value] of Object.entries(wire)) {
      if (value === null) continue;
      url.searchParams.set(key, Array.isArray(value) ? value.join(',') : value instanceof Date ? value.toISOString() : String(value));
    }
    return url.toString();
  }

  #requestHeaders(spec: RequestSpec, hasBody: boolean): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': `spool-sdk/${SDK_VERSION}`, ...this.#headers };
    if (hasBody) headers['content-type'] = 'application/json';
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    if (spec.admin && this.#adminKey) headers['x-admin-key'] = this.#adminKey;
    if (spec.headers) for (const [name, value] of Object.entries(spec.headers)) if (value !== undefined) headers[name] = value;
    return headers;
  }

  async #once(spec: RequestSpec): Promise<{ response: WireResponse; body: unknown }> {
    const url = this.#url(spec.path, spec.query);
    // Bodyless POST/PUT/PATCH send `{}`: equal to an empty body for a compliant server, and safe for strict ones.
    const hasBody = spec.body !== undefined || (spec.method !== 'GET' && spec.method !== 'DELETE');
    const timeoutMs = spec.timeoutMs ?? this.#timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
    try {
      const init = {
        method: spec.method,
        headers: this.#requestHeaders(spec, hasBody),
        body: hasBody ? JSON.stringify(toWire(spec.body ?? {})) : undefined,
        signal,
      };
      let response: WireResponse;
      let text: string;
      if (this.#customFetch) {
        const fetched = await this.#fetch(url, init);
        response = fetched;
        text = await fetched.text();
      } else {
        ({ response, text } = await nodeRequest(url, init));
      }
      const isJson = (response.headers.get('content-type') ?? '').includes('application/json');
      let body: unknown = text;
      if (isJson) body = text === '' ? undefined : JSON.parse(text);
      else if (text === '') body = undefined;
      return { response, body };
    } catch (err) {
      if (spec.signal?.aborted) throw spec.signal.reason;
      if (timeout.aborted) throw new SpoolTimeoutError(url, timeoutMs);
      if (err instanceof SyntaxError) throw new SpoolNetworkError(`Invalid JSON from ${url}: ${err.message}`, url, { cause: err });
      const code = causeCode(err);
      const reason = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      throw new SpoolNetworkError(`Cannot reach ${this.baseUrl}: ${code ?? reason}`, url, { code, cause: err });
    }
  }
}
