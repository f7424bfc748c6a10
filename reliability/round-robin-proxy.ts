import { request as httpRequest, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A small loopback HTTP load balancer: each request goes to the next
 * backend in turn. A backend that refuses the connection (its process is
 * dead) is skipped and the request tried on the next one, which is safe
 * because nothing was sent; any other failure answers 502, as a real load
 * balancer would, and the client decides whether to retry. Responses are
 * streamed, so long polls and SSE pass through.
 */
export interface RoundRobinProxy {
  url: string;
  /** Replaces the backend list (base URLs); in-flight requests keep theirs. */
  setBackends(urls: string[]): void;
  readonly stats: { requests: number; refused: number; badGateway: number };
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startRoundRobinProxy(initial: string[] = []): Promise<RoundRobinProxy> {
  let backends = [...initial];
  let next = 0;
  const stats = { requests: 0, refused: 0, badGateway: 0 };
  const sockets = new Set<Socket>();

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, triesLeft: number): void => {
    if (backends.length === 0 || triesLeft === 0) {
      stats.badGateway += 1;
      res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'bad_gateway', message: 'no backend accepted the connection' }));
      return;
    }
    const target = new URL(backends[next++ % backends.length]!);
    const upstream = httpRequest({
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: target.host, 'content-length': String(body.length) },
    });
    let answered = false;
    upstream.on('response', (answer) => {
      answered = true;
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      if (answered) {
        res.destroy();
        return;
      }
      if (err.code === 'ECONNREFUSED') {
        stats.refused += 1;
        forward(req, res, body, triesLeft - 1);
        return;
      }
      stats.badGateway += 1;
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'bad_gateway', message: err.message }));
      else res.destroy();
    });
    // The client hung up before its answer was complete: drop the upstream request too.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.end(body);
  };

  const server: Server = createServer((req, res) => {
    stats.requests += 1;
    readBody(req).then(
      (body) => forward(req, res, body, Math.max(backends.length, 1) * 2),
      () => res.destroy(),
    );
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setBackends(urls) {
      backends = [...urls];
    },
    stats,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
