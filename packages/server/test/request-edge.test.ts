/**
 * Regression tests for what `npm run fuzz` found at the API edge: requests
 * refused before (or deep inside) a route must still be a 4xx with the
 * contract's error body and a precise message, never a 5xx or a bare answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { sendRaw, type RawRequest, type RawResponse } from '../../../reliability/fuzz/raw-http.js';

let server: TestServer;
let host: string;
let port: number;

before(async () => {
  server = await startTestServer('edge');
  ({ hostname: host } = new URL(server.url));
  port = Number(new URL(server.url).port);
});
after(async () => server.close());

function raw(request: Partial<RawRequest> & { target: string }): Promise<RawResponse> {
  return sendRaw(host, port, { method: 'GET', headers: [['Authorization', `Bearer ${server.apiKey}`]], ...request }, 10_000);
}

/** The contract's error body (docs/compatibility.md §1.4) with `code`, and a message matching `message`. */
function assertError(response: RawResponse, status: number, code: string, message: RegExp): void {
  assert.equal(response.status, status, response.body.toString());
  assert.match(response.headers['content-type'] ?? '', /application\/json/);
  const body = JSON.parse(response.body.toString());
  assert.equal(body.code, code);
  assert.match(body.message, message);
}

const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('API edge (regressions found by npm run fuzz)', () => {
  it('a body nested 10,000 levels deep is a 400 naming the limit, not a stack overflow (was 500 on worker heartbeat metadata)', async () => {
    const worker = await server.request('POST', '/api/v1/workers/register', { body: { queue_name: 'edge', hostname: 'edge-host' } });
    assert.equal(worker.status, 201, worker.text);
    const heartbeat = await server.request('POST', `/api/v1/workers/${worker.body.id}/heartbeat`, { rawBody: `{"status":"healthy","metadata":${nested(10_000)}}` });
    assert.equal(heartbeat.status, 400, heartbeat.text);
    assert.equal(heartbeat.body.code, 'VALIDATION_ERROR');
    assert.equal(heartbeat.body.message, 'body is nested more than 128 levels deep');
    const job = await server.request('POST', '/api/v1/jobs', { rawBody: `{"queue_name":"edge","payload":${nested(10_000)}}` });
    assert.equal(job.status, 400, job.text);
    // Brackets inside strings are text, not nesting.
    const text = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'edge', payload: { s: '['.repeat(10_000) } } });
    assert.equal(text.status, 201, text.text);
  });

  it('a NUL (%00) in a query parameter that reaches SQL is a 400, not a 500 (was 500 on GET/HEAD /jobs/dlq?queue_name=%00)', async () => {
    for (const path of ['/api/v1/jobs/dlq?queue_name=%00', '/api/v1/jobs/dlq?queue_name=a%00b', '/api/v1/jobs?queue_name=%00']) {
      const response = await server.request('GET', path);
      assert.equal(response.status, 400, `${path}: ${response.text}`);
      assert.equal(response.body.code, 'VALIDATION_ERROR');
      assert.match(response.body.message, /cannot store \(\\u0000\)/);
    }
    assert.equal((await raw({ method: 'HEAD', target: '/api/v1/jobs/dlq?queue_name=%00' })).status, 400);
  });

  it('nesting up to the limit is accepted and stored', async () => {
    const job = await server.request('POST', '/api/v1/jobs', { rawBody: `{"queue_name":"edge","payload":${nested(120)}}` });
    assert.equal(job.status, 201, job.text);
    const read = await server.request('GET', `/api/v1/jobs/${job.body.id}`);
    assert.equal(JSON.stringify(read.body.payload), nested(120));
  });

  it('incoming webhooks apply the same nesting limit to their raw bodies', async () => {
    const token = (await server.request('GET', '/api/v1/organizations/webhook-token')).body.token as string;
    const response = await server.request('POST', `/api/v1/webhooks/${server.organizationId}/custom`, { auth: null, rawBody: `{"queue_name":"edge","payload":${nested(5000)}}`, headers: { 'x-webhook-token': token } });
    assert.equal(response.status, 400, response.text);
    assert.equal(response.body.message, 'body is nested more than 128 levels deep');
  });

  it('headers too large for the HTTP parser: 431 with an error body (was Fastify\'s own shape without code)', async () => {
    assertError(await raw({ target: '/api/v1/jobs', headers: [['Authorization', `Bearer sk_test_${'A'.repeat(20_000)}`]] }), 431, 'BAD_REQUEST', /headers are too large/);
  });

  it('a GET with a large body gets its whole answer (was cut off by the reset of closing over the unread body); one over the body limit is a 413', async () => {
    const body = Buffer.alloc(4 * 1024 * 1024, 'x');
    for (const chunked of [false, true]) {
      const response = await raw({ target: '/docs/json', headers: [['Content-Type', 'application/json'], ['Connection', 'close']], body, chunked });
      assert.equal(response.status, 200, `chunked ${chunked}`);
      assert.equal(response.body.length, Number(response.headers['content-length']), `chunked ${chunked}: the whole answer arrived`);
      assert.ok(JSON.parse(response.body.toString()).openapi);
    }
    assertError(await raw({ target: '/health', headers: [['Content-Type', 'application/json']], body: Buffer.alloc(7 * 1024 * 1024, 'x'), chunked: true }), 413, 'PAYLOAD_TOO_LARGE', /takes none/);
  });

  it('a request the HTTP parser refuses: 400 with an error body', async () => {
    assertError(await raw({ target: '/api/v1/jobs?a=\u00e9' }), 400, 'BAD_REQUEST', /Malformed HTTP request/);
    assertError(await raw({ target: '/api/v1/jobs', headers: [['X-Bad', 'a\u0001b']] }), 400, 'BAD_REQUEST', /Malformed HTTP request/);
  });

  it('a path id longer than the router allows is "not found" with an error body (was 414 FST_ERR_MAX_PARAM_LENGTH)', async () => {
    // (GET falls through to the dashboard's wildcard route first, whose not-found is also a contract 404.)
    assertError(await raw({ target: `/api/v1/jobs/${'a'.repeat(500)}` }), 404, 'NOT_FOUND', /not found/i);
    assertError(await raw({ method: 'PUT', target: `/api/v1/jobs/${'a'.repeat(500)}/priority`, headers: [['Authorization', `Bearer ${server.apiKey}`], ['Content-Type', 'application/json']], body: Buffer.from('{"priority":1}') }), 404, 'NOT_FOUND', /longer than 100/);
  });

  it('malformed percent-encoding in the path: 400 with an error body', async () => {
    assertError(await raw({ target: '/api/v1/jobs/%E0%A4%A' }), 400, 'BAD_REQUEST', /percent-encoded/);
  });

  it('an Expect header Node cannot meet: 417 with an error body (was a bare 417)', async () => {
    assertError(await raw({ method: 'POST', target: '/api/v1/jobs', headers: [['Authorization', `Bearer ${server.apiKey}`], ['Content-Type', 'application/json'], ['Expect', 'x-junk']], body: Buffer.from('{}') }), 417, 'BAD_REQUEST', /Unsupported Expect header: x-junk/);
  });

  it('a malformed WebSocket handshake on any route: 400 with an error body (was text/html from ws)', async () => {
    const upgrade: [string, string][] = [['Authorization', `Bearer ${server.apiKey}`], ['Connection', 'Upgrade'], ['Upgrade', 'websocket']];
    assertError(await raw({ target: '/api/v1/queues/q/stats', headers: upgrade }), 400, 'BAD_REQUEST', /handshake refused: Missing or invalid Sec-WebSocket-Key/);
    assertError(await raw({ target: '/api/v1/ws', headers: [...upgrade, ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='], ['Sec-WebSocket-Version', '99']] }), 400, 'BAD_REQUEST', /Sec-WebSocket-Version/);
  });

  it('GET /api/v1/ws without an Upgrade: 426 with an error body (was an empty 404)', async () => {
    const response = await raw({ target: '/api/v1/ws' });
    assertError(response, 426, 'BAD_REQUEST', /WebSocket/);
    assert.equal(response.headers.upgrade, 'websocket');
    // Authentication still comes first.
    assertError(await raw({ target: '/api/v1/ws', headers: [] }), 401, 'AUTHENTICATION_FAILED', /./);
  });
});
