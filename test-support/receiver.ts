import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  at: number;
}

/**
 * A webhook receiver on loopback for tests. `respond` decides each answer
 * (status code) from the request and how many came before it.
 */
export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  respond: (request: ReceivedRequest, index: number) => number;
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(respond: Receiver['respond'] = () => 200): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const receiver: Receiver = {
    url: '',
    requests,
    respond,
    waitFor(count, timeoutMs = 10_000) {
      if (requests.length >= count) return Promise.resolve(requests);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${requests.length} of ${count} requests within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ count, resolve: () => { clearTimeout(timer); resolve(requests); } });
      });
    },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => { body += chunk; });
    req.on('end', () => {
      let json: unknown = null;
      try { json = JSON.parse(body); } catch { /* not JSON */ }
      const entry: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, json, at: Date.now() };
      const index = requests.length;
      requests.push(entry);
      const status = receiver.respond(entry, index);
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status < 300 ? 'ok' : 'nope');
      for (const w of [...waiters]) if (requests.length >= w.count) { waiters.splice(waiters.indexOf(w), 1); w.resolve(); }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
