/**
 * `spool` as a user first meets it: `npx spool --help` in a checkout after
 * `npm install`, and clear usage errors for a --url that cannot be Spool.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/spool.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: { ...process.env, SPOOL_API_KEY: 'sk_test_x', ...options.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const spool = (...args: string[]) => run(process.execPath, [BIN, ...args]);

let web: Server;
let webUrl: string;

before(async () => {
  // Not Spool: a web server that answers everything with an HTML page, 200 for /app paths and 404 otherwise.
  web = createServer((req, res) => {
    const found = req.url!.startsWith('/app/');
    res.writeHead(found ? 200 : 404, { 'content-type': 'text/html' });
    res.end(`<!DOCTYPE html><html><body><h1>${found ? 'My app' : 'Not Found'}</h1>${'<p>filler</p>'.repeat(200)}</body></html>`);
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
});

after(() => new Promise<void>((resolve) => web.close(() => resolve())));

test('npx spool --help works from the repository root and from inside a package', async () => {
  for (const cwd of [ROOT, `${ROOT}packages/sdk`]) {
    const help = await run('npx', ['--no-install', 'spool', '--help'], { cwd });
    assert.equal(help.code, 0, `${cwd}: ${help.stderr}`);
    assert.match(help.stdout, /^Usage: spool \[options\] \[command\]$/m);
    for (const command of ['start', 'migrate', 'enqueue', 'jobs', 'dlq', 'queues', 'schedules', 'workflows', 'webhooks', 'api-keys', 'workers', 'stats']) {
      assert.match(help.stdout, new RegExp(`^  ${command}\\b`, 'm'), `--help lists ${command}`);
    }
  }
  const version = await spool('--version');
  assert.equal(version.stdout.trim(), '0.1.0');
  const sub = await spool('schedules', 'create', '--help');
  assert.equal(sub.code, 0);
  assert.match(sub.stdout, /cron has 6 fields: sec min hour/);
});

test('a --url that is not a URL, or not http, is a usage error (exit 2)', async () => {
  const bad = await spool('--url', 'localhost 8080', 'jobs', 'list');
  assert.equal(bad.code, 2);
  assert.equal(bad.stderr, 'spool: --url / SPOOL_URL is not a URL: "localhost 8080" (expected something like http://localhost:8080)\n');

  const ftp = await run(process.execPath, [BIN, 'stats'], { env: { SPOOL_URL: 'ftp://example.com' } });
  assert.equal(ftp.code, 2);
  assert.match(ftp.stderr, /^spool: --url \/ SPOOL_URL must be an http:\/\/ or https:\/\/ URL, got "ftp:\/\/example\.com"$/m);
});

test('a --url that is some other web server: a short message and a hint, not its HTML', async () => {
  const notFound = await spool('--url', webUrl, 'jobs', 'list');
  assert.equal(notFound.code, 1);
  assert.match(notFound.stderr, /^spool: HTTP 404 with an HTML page instead of a JSON error/m);
  assert.match(notFound.stderr, new RegExp(`^hint: Is ${webUrl} a Spool server\\? Check --url / SPOOL_URL\\.$`, 'm'));
  assert.doesNotMatch(notFound.stderr, /<html|filler/);

  const page = await spool('--url', `${webUrl}/app`, 'jobs', 'list', '--json');
  assert.equal(page.code, 1);
  // --json: the failure is JSON too.
  const failure = JSON.parse(page.stderr);
  assert.equal(failure.code, 'NETWORK_ERROR');
  assert.match(failure.message, /^GET \/api\/v1\/jobs answered with an HTML page, not JSON: is http:\/\/127\.0\.0\.1:\d+\/app a Spool server\?$/);
  assert.equal(page.stdout, '');
});
