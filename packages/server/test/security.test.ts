/**
 * Security checks the other files do not make (auth.test.ts covers JWT
 * tampering and expiry, api-keys.test.ts revocation in one process,
 * rate-limit.test.ts JSON body limits, ssrf.test.ts outgoing requests (SSRF),
 * tenant-isolation.test.ts the matrix):
 *  - revocation takes effect on the next request on every replica (no
 *    per-process key or token cache can keep a revoked key alive);
 *  - body limits of the routes with their own parsers (webhook ingestion,
 *    WebSocket messages);
 *  - every presented secret is compared in constant time;
 *  - a server logging at `trace` never writes a key, token, secret or
 *    payload value it was sent.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import WebSocket from 'ws';
import { loadConfig, startSpool, type RunningSpool } from '@spool/server';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { grpcClient } from '../../../test-support/grpc.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { sameSecret } from '../src/http/same-secret.js';

const ROOT = new URL('../../../', import.meta.url).pathname;

async function call(url: string, method: string, path: string, auth: string | null, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, text, body: text && (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text };
}

describe('revocation across replicas', () => {
  let a: TestServer;
  let b: RunningSpool;

  before(async () => {
    a = await startTestServer('revoke');
    // A second Spool on the same database: what a load balancer would send the next request to.
    b = await startSpool({ ...loadConfig({}), databaseUrl: a.database.url, host: '127.0.0.1', port: 0, grpcPort: 0, logLevel: 'silent' }, { logger: pino({ level: 'silent' }), announce: () => {} });
  });
  after(async () => {
    await b.stop();
    await a.close();
  });

  it('a key revoked through one replica fails on the very next request to the other, as do its tokens', async () => {
    const created = await call(a.url, 'POST', '/api/v1/api-keys', a.apiKey, { name: 'replicated' });
    assert.equal(created.status, 201);
    const key = created.body.key as string;
    const login = await call(b.url, 'POST', '/api/v1/auth/login', null, { api_key: key });
    assert.equal(login.status, 200);
    // Warm both replicas: a cache, if one existed, would now hold the key and the token.
    for (const url of [a.url, b.url]) {
      assert.equal((await call(url, 'GET', '/api/v1/jobs', key)).status, 200);
      assert.equal((await call(url, 'GET', '/api/v1/jobs', login.body.access_token)).status, 200);
    }
    assert.equal((await call(a.url, 'DELETE', `/api/v1/api-keys/${created.body.id}`, a.apiKey)).status, 204);
    for (const url of [b.url, a.url]) {
      const byKey = await call(url, 'GET', '/api/v1/jobs', key);
      assert.equal(byKey.status, 401, `key still accepted by ${url}`);
      assert.match(byKey.body.message, /revoked/);
      assert.equal((await call(url, 'GET', '/api/v1/jobs', login.body.access_token)).status, 401, `token still accepted by ${url}`);
    }
    assert.equal((await call(b.url, 'POST', '/api/v1/auth/refresh', null, { refresh_token: login.body.refresh_token })).status, 401);
  });

  it('a key deactivated with PUT, and a token logged out, fail at once on the other replica', async () => {
    const created = await call(b.url, 'POST', '/api/v1/api-keys', a.apiKey, { name: 'deactivated' });
    assert.equal((await call(a.url, 'GET', '/api/v1/jobs', created.body.key)).status, 200);
    assert.equal((await call(b.url, 'PUT', `/api/v1/api-keys/${created.body.id}`, a.apiKey, { is_active: false })).status, 200);
    assert.equal((await call(a.url, 'GET', '/api/v1/jobs', created.body.key)).status, 401);

    const login = await call(a.url, 'POST', '/api/v1/auth/login', null, { api_key: a.apiKey });
    assert.equal((await call(b.url, 'GET', '/api/v1/jobs', login.body.access_token)).status, 200);
    assert.equal((await call(a.url, 'POST', '/api/v1/auth/logout', login.body.access_token, { refresh_token: login.body.refresh_token })).status, 204);
    assert.equal((await call(b.url, 'GET', '/api/v1/jobs', login.body.access_token)).status, 401);
    assert.equal((await call(b.url, 'POST', '/api/v1/auth/refresh', null, { refresh_token: login.body.refresh_token })).status, 401);
  });
});

describe('body limits of routes with their own parsers', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('limits');
  });
  after(async () => server.close());

  it('webhook ingestion refuses a body over 5 MiB with 413 and the error body, and enqueues nothing', async () => {
    const token = { 'x-webhook-token': (await call(server.url, 'GET', '/api/v1/organizations/webhook-token', server.apiKey)).body.token as string };
    const body = JSON.stringify({ queue_name: 'hooks', payload: { blob: 'z'.repeat(5 * 1024 * 1024) } });
    const response = await call(server.url, 'POST', `/api/v1/webhooks/${server.organizationId}/custom`, null, body, token);
    assert.equal(response.status, 413, response.text.slice(0, 200));
    assert.equal(response.body.code, 'PAYLOAD_TOO_LARGE');
    const under = await call(server.url, 'POST', `/api/v1/webhooks/${server.organizationId}/custom`, null, { queue_name: 'hooks', payload: { small: true } }, token);
    assert.equal(under.status, 200, 'a small body is accepted (the test can fail)');
    const jobs = await server.spool.db.query("SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = 'hooks'");
    assert.equal(jobs.rows[0].n, 1);
  });

  it('a WebSocket message over 64 KiB closes the connection with 1009 (message too big)', async () => {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/api/v1/ws`, { headers: { authorization: `Bearer ${server.apiKey}` } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.send(JSON.stringify({ cmd: 'Subscribe', queue: 'q'.repeat(70 * 1024) }));
    assert.equal(await closed, 1009);
  });
});

describe('constant-time secret comparison', () => {
  const sources = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
  const files = ['packages/server/src', 'packages/engine/src'].flatMap((d) => sources(join(ROOT, d)));

  it('sameSecret is right for equal, different and different-length values (it never throws on lengths)', () => {
    assert.equal(sameSecret('abc', 'abc'), true);
    assert.equal(sameSecret('abc', 'abd'), false);
    assert.equal(sameSecret('a', 'a'.repeat(1000)), false);
    assert.equal(sameSecret('', 'x'), false);
  });

  it('every presented secret (admin key, webhook token, GitHub and Stripe signatures, metrics token) goes through sameSecret', () => {
    const uses = (file: string) => readFileSync(join(ROOT, file), 'utf8').match(/sameSecret\(/g)?.length ?? 0;
    assert.ok(uses('packages/server/src/http/admin-auth.ts') >= 1, 'admin key');
    assert.ok(uses('packages/server/src/routes/incoming-webhooks.ts') >= 3, 'webhook token, GitHub and Stripe signatures');
    assert.ok(uses('packages/server/src/metrics/operator-token.ts') >= 1, 'metrics token');
  });

  it('no source compares a secret with === or calls timingSafeEqual outside sameSecret', () => {
    const secretish = /(secret|token|signature|admin_?api_?key|adminKey|password)\w*/i;
    const offenders: string[] = [];
    for (const file of files) {
      const rel = relative(ROOT, file);
      readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
        if (/timingSafeEqual\(/.test(line) && !rel.endsWith('http/same-secret.ts')) offenders.push(`${rel}:${i + 1}: ${line.trim()}`);
        for (const m of line.matchAll(/([\w.[\]'"]+)\s*[!=]==?\s*([\w.[\]'"]+)/g)) {
          const [left, right] = [m[1]!, m[2]!];
          const literal = (s: string) => /^(null|undefined|true|false|\d+|'[^']*'|"[^"]*")$/.test(s) || /\.(length|size)$/.test(s) || /typeof/.test(line.slice(0, m.index));
          if ((secretish.test(left) || secretish.test(right)) && !literal(left) && !literal(right) && !/token_?type|tokenType|expected/.test(left + right)) {
            offenders.push(`${rel}:${i + 1}: ${line.trim()}`);
          }
        }
      });
    }
    assert.deepEqual(offenders, []);
  });
});

describe('logs never carry secrets or payloads', () => {
  let database: TestDatabase;
  let child: ChildProcess;
  let output = '';
  let url = '';
  let grpcPort = 0;
  const marker = (what: string) => `${what}-${randomBytes(6).toString('hex')}`;
  const env = {
    ADMIN_API_KEY: marker('admin-key'),
    JWT_SECRET: marker('jwt-secret'),
    GITHUB_WEBHOOK_SECRET: marker('github-secret'),
    STRIPE_WEBHOOK_SECRET: marker('stripe-secret'),
    METRICS_TOKEN: marker('metrics-token'),
    SPOOL_SECRETS_KEY: randomBytes(32).toString('base64'),
  };

  before(async () => {
    database = await createTestDatabase('logscan');
    child = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...env, DATABASE_URL: database.url, HOST: '127.0.0.1', PORT: '0', GRPC_PORT: '0', LOG_LEVEL: 'trace', DATABASE_POOL_MAX: '6', DEFAULT_PLAN: 'unlimited', RATE_LIMIT_PUBLIC_PER_MINUTE: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start: ${output}`)), 60_000);
      child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${output}`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        output += `${line}\n`;
        try {
          const entry = JSON.parse(line) as { msg?: string; url?: string; grpcPort?: number };
          if (entry.msg === 'Spool is listening' && entry.url) {
            url = entry.url;
            grpcPort = entry.grpcPort ?? 0;
            clearTimeout(timer);
            resolve();
          }
        } catch {
          // the first-start announcement is plain text
        }
      });
    });
  });
  after(async () => {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
    await database.drop();
  });

  it('drives keys, tokens, the admin key, webhook secrets and marked payloads through the API; none reaches the log', async () => {
    const secrets: string[] = Object.values(env);
    const slug = `logscan-${randomBytes(3).toString('hex')}`;
    const billing = `${marker('billing')}@example.com`;
    const org = await call(url, 'POST', '/api/v1/organizations', null, { name: 'Log scan', slug, billing_email: billing });
    assert.equal(org.status, 201, org.text);
    const key = org.body.api_key.key as string;
    const orgId = org.body.organization.id as string;
    secrets.push(key, billing);

    // Jobs with marked payload, tags, idempotency key, result and error.
    const payload = marker('payload');
    const tag = marker('tag');
    const idem = marker('idempotency');
    const result = marker('result');
    const failure = marker('failure');
    secrets.push(payload, tag, idem, result, failure);
    assert.equal((await call(url, 'POST', '/api/v1/jobs', key, { queue_name: 'scan', payload: { secret: payload }, tags: { t: tag }, idempotency_key: idem })).status, 201);
    assert.equal((await call(url, 'POST', '/api/v1/jobs', key, { queue_name: 'scan', payload: { secret: payload } })).status, 201);
    const claim = await call(url, 'POST', '/api/v1/jobs/claim', key, { queue_name: 'scan', worker_id: 'w', limit: 2 });
    const [first, second] = claim.body.jobs;
    assert.equal((await call(url, 'POST', `/api/v1/jobs/${first.id}/complete`, key, { worker_id: 'w', lease_id: first.lease_id, result: { r: result } })).status, 200);
    assert.equal((await call(url, 'POST', `/api/v1/jobs/${second.id}/fail`, key, { worker_id: 'w', lease_id: second.lease_id, error: failure })).status, 200);
    // Refused requests that carry marked values.
    const badValue = marker('bad-value');
    const wrongKey = `sk_test_${marker('wrong')}`;
    const wrongAdmin = marker('wrong-admin');
    secrets.push(badValue, wrongKey, wrongAdmin);
    assert.equal((await call(url, 'POST', '/api/v1/jobs', key, { queue_name: `bad name ${badValue}`, payload: {} })).status, 400);
    assert.equal((await call(url, 'POST', '/api/v1/jobs', key, { queue_name: 'scan', payload: {}, scheduled_at: badValue })).status, 400);
    assert.equal((await call(url, 'POST', '/api/v1/jobs', key, `{"queue_name":"scan","payload":"${badValue}"`)).status, 400);
    // (Path ids are logged with the URL by design: they name objects, they are not secrets.)
    assert.equal((await call(url, 'GET', '/api/v1/jobs', wrongKey)).status, 401);
    assert.equal((await call(url, 'GET', '/api/v1/admin/stats', null, undefined, { 'x-admin-key': wrongAdmin })).status, 401);

    // Tokens: login, use, refresh, validate, realtime with ?token=, logout.
    const login = await call(url, 'POST', '/api/v1/auth/login', null, { api_key: key });
    const { access_token: access, refresh_token: refresh } = login.body;
    const refreshed = await call(url, 'POST', '/api/v1/auth/refresh', null, { refresh_token: refresh });
    secrets.push(access, refresh, refreshed.body.access_token);
    assert.equal((await call(url, 'GET', '/api/v1/jobs', access)).status, 200);
    assert.equal((await call(url, 'POST', '/api/v1/auth/validate', null, { token: access })).status, 200);
    const sse = new AbortController();
    const stream = await fetch(`${url}/api/v1/events?token=${access}`, { signal: sse.signal });
    assert.equal(stream.status, 200);
    sse.abort();
    const ws = new WebSocket(`${url.replace('http', 'ws')}/api/v1/ws?token=${access}`);
    await new Promise((resolve, reject) => { ws.once('message', resolve); ws.once('error', reject); });
    ws.close();

    // Admin key, metrics token, gRPC key.
    assert.equal((await call(url, 'GET', '/api/v1/admin/stats', null, undefined, { 'x-admin-key': env.ADMIN_API_KEY })).status, 200);
    assert.equal((await call(url, 'GET', '/metrics', env.METRICS_TOKEN)).status, 200);
    const grpc = grpcClient(`127.0.0.1:${grpcPort}`, key);
    const grpcPayload = marker('grpc-payload');
    secrets.push(grpcPayload);
    await grpc.call('queue', 'Enqueue', { queueName: 'scan', payload: { fields: { s: { stringValue: grpcPayload } } } });
    await grpc.call('queue', 'Enqueue', { queueName: 'scan' }, { apiKey: wrongKey }).catch(() => {});
    grpc.close();

    // Webhook token, provider signatures, outgoing webhook secret.
    const token = await call(url, 'POST', '/api/v1/organizations/webhook-token/regenerate', key);
    const webhookToken = token.body.token as string;
    const hookPayload = marker('hook-payload');
    const hookSecret = marker('hook-secret');
    secrets.push(webhookToken, hookPayload, hookSecret);
    assert.equal((await call(url, 'POST', `/api/v1/webhooks/${orgId}/custom`, null, { queue_name: 'hooks', payload: { p: hookPayload } }, { 'x-webhook-token': webhookToken })).status, 200);
    assert.equal((await call(url, 'POST', `/api/v1/webhooks/${orgId}/custom`, null, { queue_name: 'hooks', payload: {} }, { 'x-webhook-token': wrongAdmin })).status, 401);
    // The first-start organization exists too, so the server-wide secret does not apply: the organization's own does.
    const githubSecret = marker('org-github-secret');
    secrets.push(githubSecret);
    assert.equal((await call(url, 'PUT', '/api/v1/organizations/webhook-secrets/github', key, { secret: githubSecret })).status, 200);
    const raw = JSON.stringify({ p: hookPayload });
    const signature = `sha256=${createHmac('sha256', githubSecret).update(raw).digest('hex')}`;
    secrets.push(signature.slice('sha256='.length));
    assert.equal((await call(url, 'POST', `/api/v1/webhooks/${orgId}/github`, null, raw, { 'x-webhook-token': webhookToken, 'x-hub-signature-256': signature, 'x-github-event': 'push' })).status, 200);
    const hook = await call(url, 'POST', '/api/v1/outgoing-webhooks', key, { name: 'scan', url: 'http://127.0.0.1:9/hook', events: ['job.completed'], secret: hookSecret });
    assert.equal(hook.status, 201, hook.text);
    await call(url, 'POST', `/api/v1/outgoing-webhooks/${hook.body.id}/test`, key);
    assert.equal((await call(url, 'POST', '/api/v1/auth/logout', access, { refresh_token: refresh })).status, 204);

    // Let the last lines (request completed, webhook attempts) reach the pipe.
    await new Promise((r) => setTimeout(r, 500));
    const lines = output.split('\n').filter((l) => l.startsWith('{'));
    // The scan can fail: every request is logged, with its URL.
    assert.ok(lines.filter((l) => l.includes('request completed') && l.includes('/api/v1/jobs')).length >= 5, `request lines name their routes:\n${lines.slice(0, 5).join('\n')}`);
    const leaks = secrets.filter((s) => lines.some((l) => l.includes(s)));
    assert.deepEqual(leaks, [], `secrets in the log:\n${lines.filter((l) => leaks.some((s) => l.includes(s))).slice(0, 5).join('\n')}`);
  });
});
