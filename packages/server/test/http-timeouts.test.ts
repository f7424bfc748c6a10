/**
 * A client that never finishes its request holds nothing for long: bodies and headers that stall, and connections that send nothing or
 * sit idle after a request, are closed within their configured bounds, while
 * a long poll and an SSE stream, whose request is complete, are not cut.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '@spool/server';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const REQUEST_MS = 800;
const HEADERS_MS = 400;
const KEEPALIVE_MS = 1_000;

let server: TestServer;
let port: number;
before(async () => {
  server = await startTestServer('timeouts', { httpRequestTimeoutMs: REQUEST_MS, httpHeadersTimeoutMs: HEADERS_MS, httpKeepAliveTimeoutMs: KEEPALIVE_MS });
  port = Number(new URL(server.url).port);
});
after(async () => server.close());

/** Opens a socket, writes `first`, then stalls; resolves with what arrived and when the server closed it. */
function stall(first: string, giveUpMs = 10_000): Promise<{ closedAfterMs: number; received: string }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket: Socket = connect(port, '127.0.0.1', () => {
      if (first) socket.write(first);
    });
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => { received += chunk; });
    socket.on('error', () => {});
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${giveUpMs} ms`));
    }, giveUpMs);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ closedAfterMs: Date.now() - started, received });
    });
  });
}

const head = (extra: string) => `POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.apiKey}\r\nContent-Type: application/json\r\n${extra}`;

describe('HTTP timeouts', () => {
  it('closes a connection whose body stalls (Content-Length 1000, a few bytes sent) within the request bound, with a 408 body', async () => {
    const { closedAfterMs, received } = await stall(head('Content-Length: 1000\r\n\r\n{"queue_name":'));
    assert.ok(closedAfterMs >= REQUEST_MS - 50 && closedAfterMs < REQUEST_MS + 1_500, `closed after ${closedAfterMs} ms; bound ${REQUEST_MS}`);
    assert.match(received, /^HTTP\/1\.1 408/);
    assert.match(received, /"code":"BAD_REQUEST".*not received in time/);
  });

  it('closes a connection whose headers never finish within the headers bound', async () => {
    const { closedAfterMs, received } = await stall('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a');
    assert.ok(closedAfterMs < HEADERS_MS + 1_000, `closed after ${closedAfterMs} ms; bound ${HEADERS_MS}`);
    assert.match(received, /^HTTP\/1\.1 408/);
  });

  it('closes a connection that sends nothing at all within the headers bound', async () => {
    const { closedAfterMs } = await stall('');
    assert.ok(closedAfterMs < HEADERS_MS + 1_000, `closed after ${closedAfterMs} ms; bound ${HEADERS_MS}`);
  });

  it('closes an idle keep-alive connection after the keep-alive bound', async () => {
    const { closedAfterMs, received } = await stall('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    assert.match(received, /^HTTP\/1\.1 200/);
    assert.ok(closedAfterMs >= KEEPALIVE_MS - 50 && closedAfterMs < KEEPALIVE_MS + 2_000, `closed after ${closedAfterMs} ms; bound ${KEEPALIVE_MS}`);
  });

  it('does not cut a long poll that waits longer than the request bound', async () => {
    const started = Date.now();
    const response = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'timeouts-lp', worker_id: 'w1', wait_ms: 3 * REQUEST_MS } });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body.jobs, []);
    assert.ok(Date.now() - started >= 3 * REQUEST_MS - 100, 'it waited its wait_ms');
  });

  it('does not cut an SSE stream that stays open longer than the request and keep-alive bounds', async () => {
    const controller = new AbortController();
    const response = await fetch(`${server.url}/api/v1/events?token=${server.apiKey}`, { signal: controller.signal });
    assert.equal(response.status, 200);
    const reader = response.body!.getReader();
    const enqueued = new Promise<void>((resolve) => setTimeout(() => {
      void server.request('POST', '/api/v1/jobs', { body: { queue_name: 'timeouts-sse', payload: {} } }).then(() => resolve());
    }, 2 * KEEPALIVE_MS));
    let text = '';
    const deadline = Date.now() + 8_000;
    while (!text.includes('timeouts-sse') && Date.now() < deadline) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += Buffer.from(chunk.value).toString('utf8');
    }
    await enqueued;
    controller.abort();
    assert.match(text, /timeouts-sse/, 'the stream still delivered an event after the bounds had passed');
  });

  it('has documented defaults and refuses a headers bound longer than the request bound', () => {
    const defaults = loadConfig({});
    assert.deepEqual([defaults.httpRequestTimeoutMs, defaults.httpHeadersTimeoutMs, defaults.httpKeepAliveTimeoutMs], [30_000, 10_000, 72_000]);
    assert.throws(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_HEADERS_TIMEOUT_MS: '2000' }), /HTTP_HEADERS_TIMEOUT_MS \(2000\) must not exceed HTTP_REQUEST_TIMEOUT_MS/);
    assert.throws(() => loadConfig({ HTTP_KEEPALIVE_TIMEOUT_MS: 'soon' }), /HTTP_KEEPALIVE_TIMEOUT_MS must be an integer/);
  });
});
