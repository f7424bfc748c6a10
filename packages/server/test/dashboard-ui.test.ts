import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { pino } from 'pino';
import type { AppContext } from '../src/app.js';
import { DashboardAssets, dashboardAssets } from '../src/dashboard-assets.js';
import { installErrorHandler } from '../src/http/errors.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DASHBOARD_SECTIONS, dashboardUiRoutes } from '../src/routes/dashboard-ui.js';
import { VERSION } from '../src/version.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('dashboardui');
});
after(async () => server.close());

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.url}${path}`, { headers, redirect: 'manual' });

describe('dashboard at /', () => {
  it('serves index.html with a strict content security policy', async () => {
    const res = await get('/');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await res.text(), /<div id="app"><\/div>/);
    assert.match(res.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal((await fetch(`${server.url}/`, { method: 'HEAD' })).status, 200);
  });

  it('answers every app path with index.html, so filtered URLs can be shared', async () => {
    for (const path of ['/jobs', '/jobs/0190a2b4-0000-7000-8000-000000000000', '/dead-letters?queue=emails&page=2', '/settings?webhook=x']) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.match(await res.text(), /<div id="app">/, path);
    }
  });

  it('serves index.html for every route of the app (app.tsx ROUTES), and only under its sections', async () => {
    const source = readFileSync(fileURLToPath(new URL('../../dashboard/src/app.tsx', import.meta.url)), 'utf8');
    const routes = source.slice(source.indexOf('const ROUTES')).split('];')[0]!;
    const patterns = [...routes.matchAll(/\[\s*'(\/[^']*)'/g)].map((m) => m[1]!);
    assert.ok(patterns.length >= 5, routes);
    for (const pattern of patterns) {
      const path = pattern.replace(/:[a-z]+/gi, 'web.1');
      assert.ok(pattern === '/' || DASHBOARD_SECTIONS.includes(pattern.split('/')[1] as never), `${pattern}: add its section to DASHBOARD_SECTIONS`);
      const res = await get(path, { accept: 'text/html' });
      assert.equal(res.status, 200, path);
      assert.match(await res.text(), /<div id="app">/, path);
    }
  });

  it('answers paths that are no page with a 404: a plain page for a browser, the JSON error otherwise', async () => {
    for (const path of ['/healthz', '/readyz', '/livez', '/nope', '/jobs/a/b', '/queue', '/wp-admin/', '/index']) {
      const browser = await get(path, { accept: 'text/html,application/xhtml+xml' });
      assert.equal(browser.status, 404, path);
      assert.match(browser.headers.get('content-type') ?? '', /^text\/html/, path);
      const page = await browser.text();
      assert.doesNotMatch(page, /<div id="app">/, path);
      assert.match(page, /There is no page at <code>/, path);
      const probe = await get(path);
      assert.equal(probe.status, 404, path);
      const body = (await probe.json()) as { code: string; message: string; details: unknown };
      assert.equal(body.code, 'NOT_FOUND', path);
      assert.ok('details' in body, path);
    }
    const healthz = (await (await get('/healthz')).json()) as { message: string };
    assert.match(healthz.message, /health checks are GET \/health, \/health\/live and \/health\/ready/);
    assert.doesNotMatch((await (await get('/<script>x', { accept: 'text/html' })).text()), /<script>x/, 'the path is escaped');
  });

  it('/health reports the version', async () => {
    const health = (await (await get('/health')).json()) as { status: string; version: string; database: boolean; cache: boolean };
    assert.deepEqual(health, { status: 'healthy', version: VERSION, database: true, cache: true });
    assert.match(VERSION, /^\d+\.\d+\.\d+/);
  });

  it('serves hashed assets pre-compressed and cached for good', async () => {
    const dir = dashboardAssets().distDir;
    const script = readdirSync(join(dir, 'assets')).find((f) => f.endsWith('.js'))!;
    const br = await get(`/assets/${script}`, { 'accept-encoding': 'br, gzip' });
    assert.equal(br.status, 200);
    assert.equal(br.headers.get('content-encoding'), 'br');
    assert.match(br.headers.get('content-type') ?? '', /javascript/);
    assert.equal(br.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const plain = await get(`/assets/${script}`, { 'accept-encoding': 'identity' });
    assert.equal(plain.headers.get('content-encoding'), null);
    assert.ok(Number(br.headers.get('content-length')) < Number(plain.headers.get('content-length')) / 2, 'the brotli file is sent, not the raw one');
    await Promise.all([br.arrayBuffer(), plain.arrayBuffer()]);
  });

  it('keeps the API, health, metrics and docs paths out of the app: unknown ones are JSON 404s', async () => {
    for (const path of ['/api/v1/no-such-route', '/api/v1/jobs/x/no-such-thing', '/api/v2/jobs', '/health/nope', '/docs/nope.txt']) {
      const res = await get(path);
      assert.equal(res.status, 404, path);
      const body = (await res.json()) as { code: string };
      assert.equal(body.code, 'NOT_FOUND', path);
    }
    assert.equal((await get('/health')).status, 200);
    assert.ok([200, 302].includes((await get('/docs')).status));
    const post = await fetch(`${server.url}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(post.status, 404, 'only GET reaches the app');
  });

  it('answers a missing asset with a 404, and never serves a file outside dist/', async () => {
    assert.equal((await get('/assets/missing-abc123.js')).status, 404);
    assert.equal((await get('/favicon.ico')).status, 404);
    for (const path of ['/..%2f..%2fpackage.json', '/%2e%2e/%2e%2e/package.json', '/assets/..%2f..%2fbuild.mjs', '/..%5c..%5cpackage.json', '/%00index.html']) {
      const res = await get(path);
      const text = await res.text();
      assert.ok(!text.includes('"name"') && !text.includes('vite build'), `${path} leaked a file (${res.status})`);
    }
  });
});

describe('dashboard build on first start', () => {
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** A stand-in dashboard package whose build.mjs writes dist/ after a short delay (or fails). */
  function fakePackage(outcome: 'ok' | 'fail'): string {
    const dir = mkdtempSync(join(tmpdir(), 'spool-dash-'));
    dirs.push(dir);
    const script = outcome === 'ok'
      ? `import { mkdirSync, writeFileSync } from 'node:fs';
         console.log('transforming...');
         await new Promise((r) => setTimeout(r, 300));
         mkdirSync('dist', { recursive: true });
         writeFileSync('dist/index.html', '<!doctype html><div id="app"></div>');
         console.log('built');`
      : `console.error('syntax error in app.tsx'); process.exit(1);`;
    writeFileSync(join(dir, 'build.mjs'), script);
    return dir;
  }

  async function appFor(assets: DashboardAssets, lines: string[]) {
    const app = Fastify();
    installErrorHandler(app);
    const logger = pino({ level: 'silent' });
    logger.info = ((message: string) => lines.push(`info ${message}`)) as typeof logger.info;
    logger.error = ((message: string) => lines.push(`error ${message}`)) as typeof logger.error;
    await dashboardUiRoutes(app, { logger } as unknown as AppContext, assets);
    return app;
  }

  it('builds missing files in the background, says so meanwhile, then serves them', async () => {
    const assets = new DashboardAssets(fakePackage('ok'));
    assert.equal(assets.state.kind, 'missing');
    const lines: string[] = [];
    const app = await appFor(assets, lines);
    const during = await app.inject({ method: 'GET', url: '/jobs' });
    assert.equal(during.statusCode, 503);
    assert.equal(during.headers['retry-after'], '2');
    assert.match(during.body, /being built/);
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1/nope' })).statusCode, 404, 'the API is not held up');

    const state = await assets.ensure({ info: () => {}, error: () => {} });
    assert.equal(state.kind, 'ready');
    const done = await app.inject({ method: 'GET', url: '/jobs' });
    assert.equal(done.statusCode, 200);
    assert.match(done.body, /<div id="app">/);
    assert.ok(lines.some((l) => /is missing; building it now/.test(l)), lines.join('\n'));
    assert.ok(lines.some((l) => l === 'info dashboard build: transforming...'), 'the build\'s own output is logged');
    assert.ok(lines.some((l) => /dashboard: built in \d+ ms/.test(l)), lines.join('\n'));
    await app.close();
  });

  it('reports a failed build on the page and in the log', async () => {
    const assets = new DashboardAssets(fakePackage('fail'));
    const lines: string[] = [];
    const app = await appFor(assets, lines);
    const state = await assets.ensure({ info: () => {}, error: () => {} });
    assert.equal(state.kind, 'failed');
    const res = await app.inject({ method: 'GET', url: '/' });
    assert.equal(res.statusCode, 503);
    assert.match(res.body, /could not be built/);
    assert.ok(lines.some((l) => l.startsWith('error dashboard: build failed') && l.includes('syntax error in app.tsx')), lines.join('\n'));
    await app.close();
  });

  it('leaves / to the API when no dashboard package is installed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spool-nodash-'));
    dirs.push(dir);
    const assets = new DashboardAssets(dir);
    assert.equal(assets.state.kind, 'absent');
    const app = await appFor(assets, []);
    assert.equal((await app.inject({ method: 'GET', url: '/' })).statusCode, 404);
    await app.close();
  });
});
