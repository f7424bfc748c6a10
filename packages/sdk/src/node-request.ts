/**
 * One HTTP request through Node's own client with keep-alive agents, for
 * the SDK's JSON calls. Node's `fetch` (undici) added about 0.2 ms per
 * round trip at the median and several at p99 on the benchmark machine
 * (docs/performance.md), which a worker pays on every claim; streaming
 * responses (Server-Sent Events) still go through `fetch`.
 */
import http from 'node:http';
import https from 'node:https';

/** The part of a response the transport reads; `fetch`'s Response has it too. */
export interface WireResponse {
  readonly ok: boolean;
  readonly status: number;
  readonly headers: { get(name: string): string | null };
}

export interface NodeRequestInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

// Idle sockets are unreferenced by the agent, so a keep-alive connection never holds a process open.
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

export function nodeRequest(url: string, init: NodeRequestInit): Promise<{ response: WireResponse; text: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    const headers = init.body === undefined ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
    const request = (secure ? https : http).request(target, { method: init.method, headers, agent: secure ? agents.https : agents.http, signal: init.signal }, (res) => {
      res.setEncoding('utf8');
      let text = '';
      res.on('data', (chunk: string) => (text += chunk));
      res.on('error', reject);
      res.on('close', () => {
        if (!res.complete) reject(Object.assign(new Error('the connection closed before the response ended'), { code: 'ECONNRESET' }));
      });
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        resolve({
          response: {
            ok: status >= 200 && status < 300,
            status,
            headers: {
              get(name: string): string | null {
                const value = res.headers[name.toLowerCase()];
                return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
              },
            },
          },
          text,
        });
      });
    });
    request.on('error', reject);
    request.end(init.body);
  });
}
