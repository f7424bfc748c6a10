/**
 * CORS (CORS_ORIGINS): a dashboard on another origin, such as the official
 * Spooled dashboard, can log in and call the API; other origins cannot, and
 * with the setting empty nothing changes for same-origin clients.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '@spool/server';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const DASHBOARD = 'https://dash.example.com';
const CLIENT_HEADERS = 'authorization, content-type, x-organization-id, x-api-key, traceparent, tracestate';

let listed: TestServer;
let open: TestServer;
let none: TestServer;

before(async () => {
  listed = await startTestServer('cors-listed', { corsOrigins: [DASHBOARD, 'http://localhost:4321'] });
  open = await startTestServer('cors-any', { corsOrigins: ['*'] });
  none = await startTestServer('cors-none');
});
after(async () => {
  await Promise.all([listed?.close(), open?.close(), none?.close()]);
});

function preflight(server: TestServer, path: string, origin: string, method = 'POST') {
  return fetch(`${server.url}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': CLIENT_HEADERS },
  });
}

describe('CORS_ORIGINS', () => {
  it('answers the preflight of POST /api/v1/auth/login from a listed origin with methods, headers and credentials', async () => {
    const response = await preflight(listed, '/api/v1/auth/login', DASHBOARD);
    assert.equal(response.status, 204, await response.text());
    assert.equal(response.headers.get('access-control-allow-origin'), DASHBOARD);
    assert.equal(response.headers.get('access-control-allow-credentials'), 'true');
    assert.match(response.headers.get('vary') ?? '', /origin/i);
    const methods = (response.headers.get('access-control-allow-methods') ?? '').split(/,\s*/);
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) assert.ok(methods.includes(method), `methods: ${methods}`);
    const headers = (response.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
    for (const header of CLIENT_HEADERS.split(', ')) assert.ok(headers.includes(header), `headers: ${headers}`);
  });

  it('answers the preflight of every API route shape, authenticated ones included, before authentication', async () => {
    for (const [path, method] of [['/api/v1/jobs', 'POST'], ['/api/v1/jobs/00000000-0000-4000-8000-000000000000', 'DELETE'], ['/api/v1/queues/q/config', 'PUT'], ['/api/v1/admin/plans', 'GET'], ['/health', 'GET']] as const) {
      const response = await preflight(listed, path, 'http://localhost:4321', method);
      assert.equal(response.status, 204, `${method} ${path}: ${response.status}`);
      assert.equal(response.headers.get('access-control-allow-origin'), 'http://localhost:4321');
    }
  });

  it('puts the CORS headers on real answers from a listed origin, errors included, and exposes x-request-id', async () => {
    const ok = await fetch(`${listed.url}/api/v1/dashboard`, { headers: { origin: DASHBOARD, authorization: `Bearer ${listed.apiKey}` } });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('access-control-allow-origin'), DASHBOARD);
    assert.equal(ok.headers.get('access-control-allow-credentials'), 'true');
    assert.match(ok.headers.get('access-control-expose-headers') ?? '', /x-request-id/);
    assert.match(ok.headers.get('access-control-expose-headers') ?? '', /warning/);
    const refused = await fetch(`${listed.url}/api/v1/dashboard`, { headers: { origin: DASHBOARD } });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('access-control-allow-origin'), DASHBOARD);
  });

  it("puts them on an SSE stream too, which takes over the response (a cross-origin EventSource needs them)", async () => {
    const abort = new AbortController();
    try {
      const stream = await fetch(`${listed.url}/api/v1/events`, { headers: { origin: DASHBOARD, authorization: `Bearer ${listed.apiKey}` }, signal: abort.signal });
      assert.equal(stream.status, 200);
      assert.match(stream.headers.get('content-type') ?? '', /text\/event-stream/);
      assert.equal(stream.headers.get('access-control-allow-origin'), DASHBOARD);
      assert.equal(stream.headers.get('access-control-allow-credentials'), 'true');
    } finally {
      abort.abort();
    }
    const refused = await fetch(`${listed.url}/api/v1/events`, { headers: { origin: DASHBOARD } });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('access-control-allow-origin'), DASHBOARD);
  });

  it('gives an origin that is not listed no CORS headers, and its preflight is a 404 in the error shape', async () => {
    const response = await preflight(listed, '/api/v1/auth/login', 'https://evil.example.com');
    assert.equal(response.status, 404);
    assert.equal(response.headers.get('access-control-allow-origin'), null);
    assert.equal((await response.json()).code, 'NOT_FOUND');
    const real = await fetch(`${listed.url}/api/v1/dashboard`, { headers: { origin: 'https://evil.example.com', authorization: `Bearer ${listed.apiKey}` } });
    assert.equal(real.status, 200);
    assert.equal(real.headers.get('access-control-allow-origin'), null);
  });

  it('with * answers any origin with * and never with credentials (browsers refuse the pair)', async () => {
    const response = await preflight(open, '/api/v1/auth/login', 'https://anywhere.example');
    assert.equal(response.status, 204);
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.equal(response.headers.get('access-control-allow-credentials'), null);
  });

  it('by default (empty) adds nothing: the preflight is a 404 and answers carry no CORS headers', async () => {
    const response = await preflight(none, '/api/v1/auth/login', DASHBOARD);
    assert.equal(response.status, 404);
    assert.equal(response.headers.get('access-control-allow-origin'), null);
    const real = await fetch(`${none.url}/health`, { headers: { origin: DASHBOARD } });
    assert.equal(real.headers.get('access-control-allow-origin'), null);
  });

  it('is parsed from a comma list of origins and refuses what is not an origin, naming the setting', () => {
    assert.deepEqual(loadConfig({}).corsOrigins, []);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: ' https://A.example.com , http://localhost:4321,*' }).corsOrigins, ['https://a.example.com', 'http://localhost:4321', '*']);
    for (const bad of ['dash.example.com', 'https://dash.example.com/app', 'https://dash.example.com/', 'ftp://x.example']) {
      assert.throws(() => loadConfig({ CORS_ORIGINS: bad }), /CORS_ORIGINS: .* is not an origin/, bad);
    }
  });
});
