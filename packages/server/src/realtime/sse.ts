import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Closable } from './connections.js';
import type { Envelope } from './events.js';

/** A client that cannot keep up is dropped once this much is queued for it. */
const MAX_QUEUED_BYTES = 1024 * 1024;
const KEEP_ALIVE_MS = 15_000;
const MAX_STREAM_MS = 30 * 60_000;

/**
 * One Server-Sent Events response (docs/compatibility.md §4.2): each envelope is an
 * unnamed `data:` event (the SDK's EventSource listens to unnamed events
 * only), the last envelope of a history event carries `id:` (its resume
 * token), a `: ping` comment every 15 s, and the stream ends after 30 min.
 */
export class SseConnection implements Closable {
  readonly organizationId: string;
  readonly #reply: FastifyReply;
  readonly #requestId: string;
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #onClose: (() => void)[] = [];
  #started = false;
  #closed = false;

  /** Takes over the response; nothing is sent until begin(). */
  constructor(request: FastifyRequest, reply: FastifyReply, organizationId: string) {
    this.organizationId = organizationId;
    this.#reply = reply;
    this.#requestId = request.id;
    reply.hijack();
    reply.raw.on('close', () => this.close());
  }

  /** Sends the 200 and the stream's first line: the client is connected from here on. */
  begin(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    const res = this.#reply.raw;
    res.writeHead(200, {
      ...this.#replyHeaders(),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': this.#requestId,
    });
    res.write(': connected\n\n');
    this.every(KEEP_ALIVE_MS, () => this.#write(': ping\n\n'));
    const cap = setTimeout(() => this.close(), MAX_STREAM_MS);
    cap.unref();
    this.#timers.push(cap);
  }

  /** Answers with an error instead of a stream (before begin()). */
  fail(status: number, body: Record<string, unknown>): void {
    if (this.#started) {
      this.close();
      return;
    }
    this.#started = true;
    const res = this.#reply.raw;
    if (!res.headersSent) res.writeHead(status, { ...this.#replyHeaders(), 'content-type': 'application/json; charset=utf-8', 'x-request-id': this.#requestId, 'retry-after': '1' });
    res.end(JSON.stringify(body));
    this.close();
  }

  /**
   * What hooks and the route set on the reply before it was hijacked (CORS for a page on another
   * origin, whose EventSource needs them; Warning for a clamped or ignored parameter): a hijacked
   * reply's raw writeHead would drop them.
   */
  #replyHeaders(): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(this.#reply.getHeaders())) {
      if (value === undefined) continue;
      out[name] = Array.isArray(value) ? value.map(String) : String(value);
    }
    return out;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Writes envelopes; `id` goes on the last one (the position after all of them). */
  send(envelopes: Envelope[], id?: string): void {
    let chunk = '';
    envelopes.forEach((env, index) => {
      if (id !== undefined && index === envelopes.length - 1) chunk += `id: ${id}\n`;
      chunk += `data: ${JSON.stringify(env)}\n\n`;
    });
    this.#write(chunk);
  }

  every(ms: number, fn: () => void): void {
    const timer = setInterval(fn, ms);
    timer.unref();
    this.#timers.push(timer);
  }

  onClose(fn: () => void): void {
    if (this.#closed) fn();
    else this.#onClose.push(fn);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    for (const fn of this.#onClose) fn();
    const res = this.#reply.raw;
    if (!res.writableEnded) res.end();
  }

  #write(chunk: string): void {
    if (this.#closed || chunk === '') return;
    this.begin();
    const res = this.#reply.raw;
    res.write(chunk);
    if (res.writableLength > MAX_QUEUED_BYTES) {
      // Bounded memory: a slow client is dropped, not buffered for. It can
      // reconnect with Last-Event-ID and miss nothing.
      this.close();
      res.destroy();
    }
  }
}
