import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

const BIN = fileURLToPath(new URL('../bin/spool.js', import.meta.url));
let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('cli_start');
});

after(() => db.drop());

test('spool migrate reports a current schema', async () => {
  const child = spawn(process.execPath, [BIN, 'migrate', '--database-url', db.url], { env: { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, LOG_LEVEL: 'warn' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 0, `spool migrate exited with ${code}:\n${stdout}\n${stderr}`);
  assert.match(stdout, /schema is current/);
});

test('spool start serves the API and stops gracefully on one SIGTERM', async () => {
  const child = spawn(process.execPath, [BIN, 'start', '--port', '0', '--host', '127.0.0.1', '--database-url', db.url], {
    env: { ...process.env, LOG_LEVEL: 'info', GRPC_PORT: '0' },
  });
  let output = '';
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in:\n${output}`)), 30_000);
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
  });
  try {
    const health = await fetch(`${url}/health`);
    assert.equal(health.status, 200);
    assert.equal(((await health.json()) as { database: boolean }).database, true);
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0, output);
  assert.equal(output.match(/shutting down/g)?.length, 1, output);
  assert.doesNotMatch(output, /second signal/);
});
