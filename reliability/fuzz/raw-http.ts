import { connect } from 'node:net';

/**
 * A minimal HTTP/1.1 client over a plain socket. fetch and node:http refuse
 * to send what a fuzzer needs (raw non-ASCII paths, control bytes in header
 * values, invalid UTF-8, a Transfer-Encoding the body does not follow), so
 * requests are written byte for byte and the answer parsed here.
 */
export interface RawRequest {
  method: string;
  /** Request target exactly as sent (already encoded, or deliberately not). */
  target: string;
  headers: [string, string][];
  body?: Buffer;
  /** Send the body with Transfer-Encoding: chunked instead of Content-Length. */
  chunked?: boolean;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** No complete answer before the deadline. */
  timedOut: boolean;
  /** An event stream, cut after its first bytes. */
  streamed: boolean;
  /** The connection closed before a status line arrived. */
  reset: boolean;
}

const STREAM_SAMPLE_MS = 150;

function encodeRequest(host: string, request: RawRequest): Buffer {
  const lines = [`${request.method} ${request.target} HTTP/1.1`, `Host: ${host}`, 'Connection: close'];
  const names = new Set(request.headers.map(([name]) => name.toLowerCase()));
  for (const [name, value] of request.headers) lines.push(`${name}: ${value}`);
  let body = request.body ?? Buffer.alloc(0);
  if (request.chunked) {
    if (!names.has('transfer-encoding')) lines.push('Transfer-Encoding: chunked');
    body = body.length === 0 ? Buffer.from('0\r\n\r\n') : Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
  } else if (request.body !== undefined && !names.has('content-length')) {
    lines.push(`Content-Length: ${body.length}`);
  }
  // latin1 keeps every code unit below 256 as one byte: header values may carry raw bytes 0x80-0xff.
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

function dechunk(data: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (Number.isNaN(size)) return null;
    if (size === 0) return Buffer.concat(parts);
    if (data.length < eol + 2 + size + 2) return null;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

export function sendRaw(host: string, port: number, request: RawRequest, timeoutMs: number): Promise<RawResponse> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const chunks: Buffer[] = [];
    let settled = false;
    let streamTimer: NodeJS.Timeout | null = null;
    const finish = (extra: Partial<RawResponse>) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (streamTimer) clearTimeout(streamTimer);
      socket.destroy();
      resolve({ ...parse(Buffer.concat(chunks)), timedOut: false, streamed: false, ...extra });
    };
    const deadline = setTimeout(() => finish({ timedOut: true }), timeoutMs);
    socket.on('error', () => finish({}));
    socket.on('close', () => finish({}));
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      const parsed = parse(Buffer.concat(chunks));
      if (parsed.complete || (parsed.status > 0 && request.method === 'HEAD')) finish({});
      else if (parsed.status > 0 && (parsed.headers['content-type'] ?? '').includes('text/event-stream') && !streamTimer) {
        streamTimer = setTimeout(() => finish({ streamed: true }), STREAM_SAMPLE_MS);
      }
    });
    socket.write(encodeRequest(`${host}:${port}`, request));
  });
}

function parse(data: Buffer): RawResponse & { complete: boolean } {
  const empty = { status: 0, headers: {}, body: Buffer.alloc(0), timedOut: false, streamed: false, reset: true, complete: false };
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return empty;
  const [statusLine, ...headerLines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = data.subarray(end + 4);
  let body = rest;
  let complete = false;
  if (headers['transfer-encoding']?.includes('chunked')) {
    const decoded = dechunk(rest);
    if (decoded) [body, complete] = [decoded, true];
  } else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    complete = rest.length >= length;
    body = rest.subarray(0, length);
  } else if (status === 204 || status === 304 || (status >= 100 && status < 200)) {
    complete = true;
  }
  return { status, headers, body, timedOut: false, streamed: false, reset: status === 0, complete };
}
