/** The CLI against the real server (startSpool over a test database), for the routes that exist. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { SpoolClient } from '@spool/sdk';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const BIN = fileURLToPath(new URL('../bin/spool.js', import.meta.url));
let server: TestServer;
let client: SpoolClient;
let dir: string;

function spool(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, SPOOL_URL: server.url, SPOOL_API_KEY: server.apiKey } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

before(async () => {
  server = await startTestServer('cli_live');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
  dir = mkdtempSync(join(tmpdir(), 'spool-cli-live-'));
});

after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

test('enqueue, list, get, cancel against the real server', async () => {
  const one = await spool('enqueue', 'live', '{"to":"a@example.com"}', '--priority', '3', '--json');
  assert.equal(one.code, 0, one.stderr);
  const { id, created } = JSON.parse(one.stdout);
  assert.equal(created, true);

  const file = join(dir, 'jobs.ndjson');
  writeFileSync(file, Array.from({ length: 150 }, (_, n) => JSON.stringify({ n })).join('\n'));
  const bulk = await spool('enqueue', 'live-bulk', '--file', file);
  assert.equal(bulk.code, 0, bulk.stderr);
  assert.match(bulk.stdout, /^Enqueued 150 of 150 jobs on live-bulk in [\d.]+ s \(150 new, 0 already existed, 0 failed\)\.$/m);
  assert.equal((await client.jobs.list({ queueName: 'live-bulk', limit: 100 })).length, 100);

  const list = await spool('jobs', 'list', '--queue', 'live');
  assert.match(list.stdout, new RegExp(`^${id}\\s+live\\s+pending\\s+3\\s+0\\s`, 'm'));
  const got = JSON.parse((await spool('jobs', 'get', id, '--json')).stdout);
  assert.deepEqual(got.payload, { to: 'a@example.com' });
  assert.equal(got.queue_name, 'live');

  const cancelled = await spool('jobs', 'cancel', id);
  assert.equal(cancelled.stdout, `Cancelled job ${id}.\n`);
  const twice = await spool('jobs', 'cancel', id);
  assert.equal(twice.code, 1);
  assert.match(twice.stderr, /^spool: .*\(409 CONFLICT, request [0-9a-f-]+\)$/m);
});

test('dead-letter queue, queues and workers against the real server', async () => {
  const { id } = await client.jobs.create({ queueName: 'live-dlq', payload: {}, maxRetries: 0 });
  const [claimed] = await client.jobs.claim({ queueName: 'live-dlq', workerId: 'cli-test' });
  await client.jobs.fail(claimed!.id, { workerId: 'cli-test', leaseId: claimed!.leaseId, error: 'broken' });

  const dlq = await spool('dlq', 'list', '--queue', 'live-dlq');
  assert.match(dlq.stdout, new RegExp(`^${id}\\s+live-dlq\\s+deadletter\\s`, 'm'));
  const retried = await spool('jobs', 'retry', id);
  assert.match(retried.stdout, new RegExp(`^Job ${id} is pending again`));

  const paused = await spool('queues', 'pause', 'live-dlq', '--reason', 'maintenance');
  assert.equal(paused.stdout, 'Paused queue live-dlq (maintenance).\n');
  const queues = await spool('queues', 'list');
  assert.match(queues.stdout, /^live-dlq\s+paused\s/m);
  const resumed = await spool('queues', 'resume', 'live-dlq', '--json');
  assert.equal(JSON.parse(resumed.stdout).resumed, true);

  await client.workers.register({ queueName: 'live-dlq', hostname: 'cli-box', maxConcurrency: 4 });
  const workers = await spool('workers', 'list');
  assert.match(workers.stdout, /\slive-dlq\s+cli-box\s+healthy\s+0\/4\s/);
});
