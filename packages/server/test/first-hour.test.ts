import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * `npm start` as a newcomer runs it: the built entry point (dist/, plain JavaScript) with its own
 * embedded PostgreSQL in a fresh data directory, stopped by a signal.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'spool-first-hour-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

interface Run {
  child: ChildProcess;
  url: string;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  exited: Promise<number | null>;
}

async function start(env: Record<string, string> = {}): Promise<Run> {
  const { DATABASE_URL: _external, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--conditions=spool-dist', 'packages/server/dist/main.js'], {
    cwd: ROOT,
    env: { ...inherited, SPOOL_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', GRPC_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 90_000);
    void exited.then((code) => reject(new Error(`server exited with ${code}:\n${output}`)));
    const poll = setInterval(() => {
      const match = /"url":"(http:\/\/127\.0\.0\.1:\d+)".*"msg":"Spool is listening"/.exec(output);
      // The banner is written after the listening line.
      if (match && /To get an API key|shown only this once/.test(output)) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve(match[1]!);
      }
    }, 50);
  });
  return { child, url, output: () => output, exited };
}

const lines = (text: string) => text.split('\n').filter((line) => line.trim() !== '');
/** The log's last entry by its time: a pipe under load may interleave the final writes. */
const lastLogged = (text: string) => lines(text).filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { time: number; msg: string }).sort((a, b) => a.time - b.time).at(-1)?.msg;
const postmasterRunning = () => existsSync(join(dataDir, 'pg', 'postmaster.pid'));

describe('the first hour with npm start', () => {
  it('first start: the banner names the dashboard, a curl line and a CLI line; requests are not logged at info; SIGTERM stops cleanly', async () => {
    const run = await start();
    const key = /(sk_test_[A-Za-z0-9_-]{43})/.exec(run.output())?.[1];
    assert.ok(key, run.output());
    const port = new URL(run.url).port;
    assert.match(run.output(), new RegExp(`Dashboard: http://localhost:${port}/`));
    assert.match(run.output(), new RegExp(`CLI: +SPOOL_URL=http://localhost:${port} SPOOL_API_KEY=${key} npx spool `));
    for (let i = 0; i < 5; i++) assert.equal((await fetch(`${run.url}/api/v1/dashboard`, { headers: { authorization: `Bearer ${key}` } })).status, 200);
    assert.equal((await fetch(`${run.url}/api/v1/jobs/nope`, { headers: { authorization: `Bearer ${key}` } })).status, 404);
    assert.doesNotMatch(run.output(), /incoming request|request completed/, 'request lines are debug');
    const operatorToken = readFileSync(join(dataDir, 'operator-token'), 'utf8').trim();
    assert.match(run.output(), new RegExp(`${operatorToken}[\\s\\S]*kept in ${join(dataDir, 'operator-token')}`));

    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.output());
    assert.equal(lastLogged(run.output()), 'Spool stopped', lines(run.output()).slice(-3).join('\n'));
    assert.doesNotMatch(run.output(), /idle database connection failed|"level":[45]0/, 'a clean stop warns about nothing');
    assert.equal(postmasterRunning(), false, 'the embedded PostgreSQL stopped too');
  });

  it('later start: says how to get a key, with a line that works as printed', async () => {
    const run = await start();
    try {
      assert.doesNotMatch(run.output(), /sk_test_/, 'the first key is never shown again');
      const line = /curl -s -X POST -H "X-Admin-Key: \$\(cat ([^)]+)\)" -H "content-type: application\/json" -d '(\{[^']*\})' (\S+\/api-keys)/.exec(run.output());
      assert.ok(line, run.output());
      assert.equal(line[1], join(dataDir, 'operator-token'));
      const port = new URL(run.url).port;
      const minted = await fetch(line[3]!.replace(`localhost:${port}`, `127.0.0.1:${port}`), {
        method: 'POST',
        headers: { 'x-admin-key': readFileSync(line[1]!, 'utf8').trim(), 'content-type': 'application/json' },
        body: line[2],
      });
      assert.equal(minted.status, 201);
      const { key } = (await minted.json()) as { key: string };
      assert.equal((await fetch(`${run.url}/api/v1/dashboard`, { headers: { authorization: `Bearer ${key}` } })).status, 200);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
  });

  it('PostgreSQL stopped from outside (a signal to the whole process group): short lines, no client objects, and still a clean last line', async () => {
    const run = await start();
    // Fill the pool with idle connections for PostgreSQL's fast shutdown to break.
    await Promise.all(Array.from({ length: 6 }, () => fetch(`${run.url}/health`).then((r) => r.arrayBuffer())));
    const postmaster = Number(readFileSync(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(postmaster, 'SIGINT');
    for (let i = 0; i < 100 && !/embedded PostgreSQL exited/.test(run.output()); i++) await new Promise((r) => setTimeout(r, 50));
    run.child.kill('SIGTERM');
    await run.exited;
    const all = lines(run.output());
    assert.match(run.output(), /embedded PostgreSQL exited while Spool was running/);
    for (const line of all) {
      assert.ok(line.length < 1_000, `a ${line.length}-character line: ${line.slice(0, 300)}…`);
      assert.doesNotMatch(line, /"client"|_connectionString|prepared|"stack"/);
    }
    assert.match(run.output(), /"code":"57P01"/, 'the error is summarized by message and code');
    assert.equal(lastLogged(run.output()), 'Spool stopped', all.slice(-6).join('\n'));
  });
});

describe('a first start whose port is taken', () => {
  const ownDir = mkdtempSync(join(tmpdir(), 'spool-first-hour-taken-'));
  let taken: Server;
  after(() => {
    taken?.close();
    rmSync(ownDir, { recursive: true, force: true });
  });

  it('says which port and what to set, and the next start still shows the key and keeps the operator token', async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    const { DATABASE_URL: _external, ...inherited } = process.env;
    const failed = spawn(process.execPath, ['--conditions=spool-dist', 'packages/server/dist/main.js'], {
      cwd: ROOT,
      env: { ...inherited, SPOOL_DATA_DIR: ownDir, HOST: '127.0.0.1', PORT: String(port), GRPC_PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    failed.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    failed.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    assert.equal(await new Promise<number | null>((resolve) => failed.once('close', resolve)), 1, output);
    assert.match(output, new RegExp(`the HTTP port ${port} on 127\\.0\\.0\\.1 is taken .*set PORT to a free port`));
    assert.doesNotMatch(output, /sk_test_/, 'no key is created for a start that cannot be reached');
    assert.ok(existsSync(join(ownDir, 'operator-token')), 'the generated operator token is kept although the start failed');

    // The newcomer moves to another port: the key that the failed start would have lost is shown now.
    const run = await start({ SPOOL_DATA_DIR: ownDir });
    try {
      const key = /(sk_test_[A-Za-z0-9_-]{43})/.exec(run.output())?.[1];
      assert.ok(key, run.output());
      assert.equal((await fetch(`${run.url}/api/v1/dashboard`, { headers: { authorization: `Bearer ${key}` } })).status, 200);
      const operatorToken = readFileSync(join(ownDir, 'operator-token'), 'utf8').trim();
      assert.equal((await fetch(`${run.url}/metrics`, { headers: { authorization: `Bearer ${operatorToken}` } })).status, 200);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
  });
});
