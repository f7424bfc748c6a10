import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '@spool/server';
import { guardedLookup, targetRefusal, parseNetwork, webhookPolicy, type WebhookPolicy } from '../src/webhooks/ssrf.js';
import { startReceiver, type Receiver } from '../../../test-support/receiver.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { httpWorker } from '../../../test-support/worker.js';

/**
 * The server never becomes a proxy into private networks.
 * Four servers: development bound to loopback (the test default), development
 * bound to every interface, production, and production with the operator's
 * allowances (127.0.0.1/32, 10.0.0.0/8, 169.254.0.0/16 and plain http).
 */
let dev: TestServer;
let devOpen: TestServer;
let prod: TestServer;
let prodAllowed: TestServer;
const closers: (() => Promise<void>)[] = [];

before(async () => {
  [dev, devOpen, prod, prodAllowed] = await Promise.all([
    startTestServer('ssrfdev'),
    startTestServer('ssrfdevopen', { host: '0.0.0.0' }),
    startTestServer('ssrfprod', { environment: 'production' }),
    startTestServer('ssrfallow', {
      environment: 'production',
      webhookAllowedNetworks: ['127.0.0.1/32', '10.0.0.0/8', '169.254.0.0/16'].map(parseNetwork),
      webhookAllowHttp: true,
    }),
  ]);
});
after(async () => {
  for (const close of closers) await close();
  await Promise.all([dev, devOpen, prod, prodAllowed].map((s) => s?.close()));
});

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  closers.push(() => r.close());
  return r;
}

function create(server: TestServer, url: string) {
  return server.request('POST', '/api/v1/outgoing-webhooks', { body: { name: 'ssrf', url, events: ['job.created'] } });
}

async function assertRefused(server: TestServer, url: string, pattern: RegExp = /Invalid webhook URL/): Promise<void> {
  const response = await create(server, url);
  assert.equal(response.status, 400, `${url}: ${response.text}`);
  assert.equal(response.body.code, 'VALIDATION_ERROR', url);
  assert.match(response.body.message, pattern, url);
  assert.equal(response.body.details.field, 'url', url);
}

async function assertAccepted(server: TestServer, url: string): Promise<string> {
  const response = await create(server, url);
  assert.equal(response.status, 201, `${url}: ${response.text}`);
  return response.body.id;
}

/** Not public in any mode: link-local, metadata, private, unspecified, multicast, broadcast, and their IPv4-in-IPv6 and odd IPv4 spellings. */
const REFUSED_EVERYWHERE = [
  'http://169.254.169.254/latest/meta-data/',
  'http://169.254.1.1/',
  'http://[fe80::1]/',
  'http://[fd00:ec2::254]/latest',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://10.0.0.5/',
  'http://172.16.0.1/',
  'http://172.31.255.254/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://[fc00::1]/',
  'http://[fd12:3456::1]/',
  'http://0.0.0.0/',
  'http://[::]/',
  'http://224.0.0.1/',
  'http://255.255.255.255/',
  'http://[ff02::1]/',
  // IPv6 forms embedding a refused IPv4 address
  'http://[::ffff:a9fe:a9fe]/',
  'http://[::ffff:169.254.169.254]/',
  'http://[::a9fe:a9fe]/',
  'http://[::ffff:10.0.0.1]/',
  'http://[::ffff:0:a9fe:a9fe]/',
  'http://[64:ff9b::a9fe:a9fe]/',
  'http://[2002:a9fe:a9fe::1]/',
  'http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/', // Teredo, client 10.0.0.1 stored inverted
  // 169.254.169.254 spelled in decimal, hex, octal and short forms
  'http://2852039166/',
  'http://0xa9fea9fe/',
  'http://0251.0376.0251.0376/',
  'http://169.254.43518/',
  'http://0xa9.0xfe.0xa9.0xfe/',
  'https://169.254.169.254./',
];

const LOOPBACK = [
  'http://127.0.0.1:9/',
  'http://127.1.2.3/',
  'http://localhost:9/',
  'http://[::1]:9/',
  'http://2130706433/',
  'http://0x7f000001/',
  'http://0177.0.0.1/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::7f00:1]/',
];

describe('refused targets at creation', () => {
  it('refuses link-local, metadata and private targets in production and in development', async () => {
    for (const server of [prod, dev, devOpen]) for (const url of REFUSED_EVERYWHERE) await assertRefused(server, url);
  });

  it('refuses the same on update', async () => {
    const id = await assertAccepted(dev, 'http://127.0.0.1:9/ok');
    const response = await dev.request('PUT', `/api/v1/outgoing-webhooks/${id}`, { body: { url: 'http://[::ffff:a9fe:a9fe]/' } });
    assert.equal(response.status, 400);
    assert.match(response.body.message, /Invalid webhook URL/);
    assert.equal((await dev.request('GET', `/api/v1/outgoing-webhooks/${id}`)).body.url, 'http://127.0.0.1:9/ok');
  });

  it('allows loopback only in development with the server bound to loopback', async () => {
    for (const url of LOOPBACK) {
      await assertAccepted(dev, url);
      await assertRefused(devOpen, url);
      await assertRefused(prod, url);
    }
    const response = await create(devOpen, 'http://127.0.0.1:9/');
    assert.match(response.body.message, /bound to loopback/, 'the message says how to get loopback targets');
  });

  it('refuses in production every IPv6 form that embeds IPv4, even of a public address', async () => {
    for (const url of ['https://[::ffff:808:808]/', 'https://[::808:808]/', 'https://[2002:808:808::1]/', 'https://[64:ff9b::808:808]/']) {
      await assertRefused(prod, url, /embedding IPv4 8\.8\.8\.8/);
      await assertAccepted(dev, url);
    }
  });

  it('refuses plain http in production unless WEBHOOK_ALLOW_HTTP', async () => {
    await assertRefused(prod, 'http://93.184.216.34/hook', /^HTTP not allowed: url must use https.*WEBHOOK_ALLOW_HTTP=true/);
    await assertAccepted(prod, 'https://93.184.216.34/hook');
    await assertAccepted(prodAllowed, 'http://93.184.216.34/hook');
    await assertAccepted(dev, 'http://93.184.216.34/hook');
  });

  it('refuses in production a name that does not resolve, and names the variable that allows a network', async () => {
    await assertRefused(prod, 'https://no-such-host.invalid/', /does not resolve/);
    const response = await create(prod, 'https://10.1.2.3/');
    assert.match(response.body.message, /WEBHOOK_ALLOWED_NETWORKS/);
  });
});

describe('completion_webhook', () => {
  it('is refused when the job is created', async () => {
    for (const [server, url] of [[prod, 'https://169.254.169.254/'], [prod, 'https://[::ffff:a9fe:a9fe]/'], [prod, 'http://93.184.216.34/'], [dev, 'http://10.0.0.1/'], [devOpen, 'http://127.0.0.1:9/']] as const) {
      const response = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'ssrf', payload: {}, completion_webhook: url } });
      assert.equal(response.status, 400, `${url}: ${response.text}`);
      assert.equal(response.body.code, 'VALIDATION_ERROR');
      assert.match(response.body.message, /^(Invalid webhook URL|HTTP not allowed): completion_webhook/, url);
      assert.equal(response.body.details.field, 'completion_webhook');
    }
    const jobs = await prod.request('GET', '/api/v1/jobs?queue_name=ssrf');
    assert.deepEqual(jobs.body, [], 'nothing was enqueued');
    const ok = await dev.request('POST', '/api/v1/jobs', { body: { queue_name: 'ssrf', payload: {}, completion_webhook: 'http://127.0.0.1:9/done' } });
    assert.equal(ok.status, 201, ok.text);
  });

  it('is refused per item in a bulk create, the other items are inserted', async () => {
    const response = await prod.request('POST', '/api/v1/jobs/bulk', {
      body: {
        queue_name: 'ssrf-bulk',
        jobs: [
          { payload: { n: 0 }, completion_webhook: 'https://169.254.169.254/' },
          { payload: { n: 1 } },
          { payload: { n: 2 }, completion_webhook: 'https://[::a9fe:a9fe]/' },
          { payload: { n: 3 }, completion_webhook: 'https://169.254.169.254/' },
          { payload: { n: 4 }, completion_webhook: 'https://93.184.216.34/done' },
        ],
      },
    });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body.failed.map((f: { index: number }) => f.index), [0, 2, 3]);
    for (const f of response.body.failed) assert.match(f.error, /Invalid webhook URL: completion_webhook/);
    assert.deepEqual(response.body.succeeded.map((s: { index: number }) => s.index), [1, 4]);
    const stored = await prod.database.pool.query("SELECT completion_webhook FROM spool.jobs WHERE queue_name = 'ssrf-bulk' ORDER BY completion_webhook NULLS FIRST");
    assert.deepEqual(stored.rows.map((r) => r.completion_webhook), [null, 'https://93.184.216.34/done']);
  });

  it('is checked again when delivered', async () => {
    const r = await receiver();
    // As if saved before the policy, or before its name changed address.
    const id = (await prod.request('POST', '/api/v1/jobs', { body: { queue_name: 'ssrf-done', payload: {} } })).body.id;
    await prod.database.pool.query('UPDATE spool.jobs SET completion_webhook = $2 WHERE id = $1', [id, `${r.url.replace('127.0.0.1', 'localhost')}/done`]);
    const w = httpWorker(prod);
    const [job] = await w.claim('ssrf-done');
    await w.complete(job!, {});
    let delivery: { status: string; error: string } | undefined;
    for (let i = 0; i < 50 && delivery?.status !== 'failed'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      delivery = (await prod.database.pool.query('SELECT status, error FROM spool.webhook_deliveries WHERE job_id = $1', [id])).rows[0];
    }
    assert.equal(delivery?.status, 'failed');
    assert.match(delivery!.error, /Invalid webhook URL/);
    assert.equal(r.requests.length, 0);
  });
});

describe('delivery', () => {
  it('connects through a name only to addresses the policy allows (the lookup itself refuses)', async () => {
    const lookup = (policy: WebhookPolicy, all: boolean) => new Promise<{ err: NodeJS.ErrnoException | null; result: unknown }>((resolve) => {
      guardedLookup(new URL('http://localhost/'), policy)('localhost', all ? { all: true } : {}, (err, address) => resolve({ err, result: address }));
    });
    const policies = {
      dev: webhookPolicy(loadConfig({})),
      devOpen: webhookPolicy(loadConfig({ HOST: '0.0.0.0' })),
      prod: webhookPolicy(loadConfig({ SPOOL_ENV: 'production' })),
      allowed: webhookPolicy(loadConfig({ SPOOL_ENV: 'production', WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1', WEBHOOK_ALLOW_HTTP: 'true' })),
    };
    for (const all of [false, true]) {
      for (const policy of [policies.devOpen, policies.prod]) {
        const { err } = await lookup(policy, all);
        assert.equal(err?.code, 'ESSRF');
        assert.match(err!.message, /Invalid webhook URL: url host localhost resolves to a refused address: 127\.0\.0\.1 is a loopback address/);
      }
      for (const policy of [policies.dev, policies.allowed]) {
        const { err, result } = await lookup(policy, all);
        assert.equal(err, null);
        assert.deepEqual(all ? (result as { address: string }[]).map((a) => a.address) : result, all ? ['127.0.0.1'] : '127.0.0.1');
      }
    }
  });

  it('test-delivers through a name in development bound to loopback', async () => {
    const r = await receiver();
    const id = await assertAccepted(dev, `${r.url.replace('127.0.0.1', 'localhost')}/named`);
    const response = await dev.request('POST', `/api/v1/outgoing-webhooks/${id}/test`);
    assert.equal(response.status, 200);
    assert.equal(response.body.success, true, response.text);
    assert.deepEqual(Object.keys(response.body).sort(), ['error', 'response_time_ms', 'status_code', 'success']);
    assert.equal(r.requests[0]!.path, '/named');
  });

  it('refuses a stored target when test-delivering (no request leaves)', async () => {
    const r = await receiver();
    const named = r.url.replace('127.0.0.1', 'localhost');
    for (const url of [`${r.url}/literal`, `${named}/named`]) {
      const row = await prod.database.pool.query(
        "INSERT INTO spool.outgoing_webhooks (organization_id, name, url, events) VALUES ($1, 'old', $2, '{job.created}') RETURNING id",
        [prod.organizationId, url],
      );
      const response = await prod.request('POST', `/api/v1/outgoing-webhooks/${row.rows[0].id}/test`);
      assert.equal(response.status, 200);
      assert.equal(response.body.success, false);
      assert.equal(response.body.status_code, null);
      assert.match(response.body.error, /Invalid webhook URL/);
    }
    assert.equal(r.requests.length, 0);
  });

  it('does not follow a redirect from an allowed target to a refused one', async () => {
    const refused = await new Promise<{ server: Server; hits: string[]; url: string }>((resolve) => {
      const hits: string[] = [];
      const server = createServer((req, res) => { hits.push(req.url ?? ''); res.end('internal secret'); });
      server.listen(0, '127.0.0.2', () => resolve({ server, hits, url: `http://127.0.0.2:${(server.address() as AddressInfo).port}` }));
    });
    closers.push(() => new Promise((resolve) => refused.server.close(() => resolve())));
    await assertRefused(prodAllowed, `${refused.url}/`, /127\.0\.0\.2 is a loopback address/);
    for (const status of [301, 302, 303, 307, 308]) {
      const redirecting = await new Promise<Server>((resolve) => {
        const server = createServer((req, res) => { res.writeHead(status, { location: `${refused.url}/secret` }); res.end(); });
        server.listen(0, '127.0.0.1', () => resolve(server));
      });
      closers.push(() => new Promise((resolve) => redirecting.close(() => resolve())));
      const id = await assertAccepted(prodAllowed, `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/hook`);
      const response = await prodAllowed.request('POST', `/api/v1/outgoing-webhooks/${id}/test`);
      assert.equal(response.status, 200);
      assert.equal(response.body.success, false);
      assert.equal(response.body.status_code, status);
      assert.equal(response.body.error, `HTTP ${status}`);
    }
    assert.deepEqual(refused.hits, []);
  });
});

describe('operator allowances', () => {
  it('WEBHOOK_ALLOWED_NETWORKS lets a listed private target through, and nothing else', async () => {
    const r = await receiver();
    const id = await assertAccepted(prodAllowed, `${r.url}/allowed`);
    await assertRefused(prod, `${r.url}/allowed`);
    const response = await prodAllowed.request('POST', `/api/v1/outgoing-webhooks/${id}/test`);
    assert.equal(response.body.success, true, response.text);
    assert.equal(r.requests.length, 1);
    await assertAccepted(prodAllowed, 'http://10.200.0.1/');
    await assertAccepted(prodAllowed, 'http://[::ffff:10.200.0.1]/');
    await assertAccepted(prodAllowed, 'http://169.254.1.1/');
    await assertRefused(prodAllowed, 'http://192.168.1.1/');
    await assertRefused(prodAllowed, 'http://127.0.0.2/');
    await assertRefused(prodAllowed, 'http://[::1]/');
    // A metadata service is opened only by its own address listed alone.
    await assertRefused(prodAllowed, 'http://169.254.169.254/', /169\.254\.169\.254 is a metadata address/);
    await assertRefused(prodAllowed, 'http://[::ffff:a9fe:a9fe]/');
    const completion = await prodAllowed.request('POST', '/api/v1/jobs', { body: { queue_name: 'ssrf', payload: {}, completion_webhook: `${r.url}/done` } });
    assert.equal(completion.status, 201, completion.text);
  });

  it('a metadata address listed alone is allowed; its names never are', () => {
    const policy = webhookPolicy(loadConfig({ SPOOL_ENV: 'production', WEBHOOK_ALLOWED_NETWORKS: '169.254.169.254/32' }));
    assert.equal(targetRefusal(new URL('https://169.254.169.254/latest'), null, policy), null);
    assert.match(String(targetRefusal(new URL('https://metadata.google.internal/'), ['169.254.169.254'], policy)), /^Invalid webhook URL: url host metadata\.google\.internal is a cloud metadata service/);
    assert.match(String(targetRefusal(new URL('https://169.254.169.253/'), null, policy)), /169\.254\.169\.253 is a link-local address/);
  });
});

describe('configuration', () => {
  it('binds development to 127.0.0.1 and production to every interface unless HOST is set', () => {
    assert.equal(loadConfig({}).host, '127.0.0.1');
    assert.equal(loadConfig({ SPOOL_ENV: 'production' }).host, '0.0.0.0');
    assert.equal(loadConfig({ NODE_ENV: 'production' }).host, '0.0.0.0');
    assert.equal(loadConfig({ HOST: '0.0.0.0' }).host, '0.0.0.0');
    assert.equal(loadConfig({ SPOOL_ENV: 'production', HOST: '10.0.0.7' }).host, '10.0.0.7');
    assert.equal(webhookPolicy(loadConfig({})).allowLoopback, true);
    assert.equal(webhookPolicy(loadConfig({ HOST: '::1' })).allowLoopback, true);
    assert.equal(webhookPolicy(loadConfig({ HOST: 'localhost' })).allowLoopback, true);
    assert.equal(webhookPolicy(loadConfig({ HOST: '0.0.0.0' })).allowLoopback, false);
    assert.equal(webhookPolicy(loadConfig({ HOST: '::' })).allowLoopback, false);
    assert.equal(webhookPolicy(loadConfig({ SPOOL_ENV: 'production', HOST: '127.0.0.1' })).allowLoopback, false);
  });

  it('stops on an invalid WEBHOOK_ALLOWED_NETWORKS or WEBHOOK_ALLOW_HTTP, naming the variable', () => {
    for (const value of ['10.0.0.0/33', 'fd00::/129', 'intranet', '10.0.0.0/', '10.0.0.0/8,,nope', '10.0.0.0/-1']) {
      assert.throws(() => loadConfig({ WEBHOOK_ALLOWED_NETWORKS: value }), /^Error: WEBHOOK_ALLOWED_NETWORKS: /, value);
    }
    assert.throws(() => loadConfig({ WEBHOOK_ALLOW_HTTP: 'yes' }), /WEBHOOK_ALLOW_HTTP must be true or false/);
    assert.deepEqual(loadConfig({ WEBHOOK_ALLOWED_NETWORKS: ' 10.0.0.0/8 , fd00::/8,192.168.1.5' }).webhookAllowedNetworks.map((n) => [n.text, n.prefix]), [['10.0.0.0/8', 8], ['fd00::/8', 8], ['192.168.1.5', 32]]);
  });
});
