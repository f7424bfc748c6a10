import http from 'node:http';

/**
 * A minimal JSON-over-HTTP client with keep-alive sockets: what a worker SDK
 * does, without fetch's per-request overhead (which would bill Spool for
 * client CPU on a 2-core machine).
 */
export class JsonClient {
  readonly #agent: http.Agent;
  readonly #base: URL;
  readonly #headers: Record<string, string>;

  constructor(baseUrl: string, apiKey: string, maxSockets = 16) {
    this.#base = new URL(baseUrl);
    this.#agent = new http.Agent({ keepAlive: true, maxSockets });
    this.#headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
  }

  /** POSTs `body`; resolves with status and parsed JSON (null for an empty body). */
  post<T = any>(path: string, body: unknown): Promise<{ status: number; body: T }> {
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request({
        host: this.#base.hostname,
        port: this.#base.port,
        path,
        method: 'POST',
        agent: this.#agent,
        headers: { ...this.#headers, 'content-length': Buffer.byteLength(payload) },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null });
          } catch (err) {
            reject(new Error(`bad JSON from ${path} (${res.statusCode}): ${text.slice(0, 200)}`, { cause: err }));
          }
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes on one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}
