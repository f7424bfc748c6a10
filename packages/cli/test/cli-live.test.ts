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

test('schedules against the real server, human and --json', async () => {
  const created = await spool('schedules', 'create', 'live-nightly', '--cron', '0 0 3 * * *', '--timezone', 'Europe/Berlin', '--queue', 'live-sched', '--payload', '{"kind":"nightly"}', '--json');
  assert.equal(created.code, 0, created.stderr);
  const schedule = JSON.parse(created.stdout);
  assert.equal(schedule.cron_expression, '0 0 3 * * *');
  const human = await spool('schedules', 'create', 'live-hourly', '--cron', '0 0 * * * *', '--queue', 'live-sched');
  assert.match(human.stdout, /^Created schedule \S+ \(live-hourly\); next run \d{4}-\d\d-\d\d \d\d:00:00\.$/m);

  const paused = await spool('schedules', 'pause', schedule.id);
  assert.equal(paused.stdout, `Schedule ${schedule.id} is paused.\n`);
  const resumed = JSON.parse((await spool('schedules', 'resume', schedule.id, '--json')).stdout);
  assert.equal(resumed.is_active, true);
  const triggered = await spool('schedules', 'trigger', schedule.id);
  const jobId = /^Triggered schedule \S+: job (\S+)\.$/m.exec(triggered.stdout)?.[1];
  assert.ok(jobId, triggered.stdout + triggered.stderr);
  assert.deepEqual((await client.jobs.get(jobId)).payload, { kind: 'nightly' });
  const list = await spool('schedules', 'list');
  assert.match(list.stdout, new RegExp(`^${schedule.id}\\s+live-nightly\\s+0 0 3 \\* \\* \\*\\s+Europe/Berlin\\s+live-sched\\s+active\\s+1\\s`, 'm'));
  const listed = JSON.parse((await spool('schedules', 'list', '--json')).stdout);
  assert.deepEqual(listed.map((s: { name: string }) => s.name).sort(), ['live-hourly', 'live-nightly']);
  const badCron = await spool('schedules', 'create', 'broken', '--cron', '0 0 25 * * *', '--queue', 'live-sched');
  assert.equal(badCron.code, 1);
  assert.match(badCron.stderr, /^spool: cron_expression .*\(400 VALIDATION_ERROR, request \S+\)$/m);
});

test('dlq retry and purge, workers and stats against the real server, human and --json', async () => {
  // Two dead letters: one replayed with `dlq retry`, the other purged.
  const dead: string[] = [];
  for (const n of [1, 2]) {
    const { id } = await client.jobs.create({ queueName: 'live-dlq2', payload: { n }, maxRetries: 0 });
    const [claimed] = await client.jobs.claim({ queueName: 'live-dlq2', workerId: 'cli-test' });
    await client.jobs.fail(claimed!.id, { workerId: 'cli-test', leaseId: claimed!.leaseId, error: 'broken' });
    dead.push(id);
  }
  const dlqJson = JSON.parse((await spool('dlq', 'list', '--queue', 'live-dlq2', '--json')).stdout);
  assert.deepEqual(dlqJson.map((j: { id: string }) => j.id).sort(), [...dead].sort());
  const retried = await spool('dlq', 'retry', dead[0]!);
  assert.equal(retried.stdout, `Retried 1 job(s):\n${dead[0]}\n`);
  const refused = await spool('dlq', 'purge', '--queue', 'live-dlq2');
  assert.equal(refused.code, 2);
  const purged = JSON.parse((await spool('dlq', 'purge', '--queue', 'live-dlq2', '--yes', '--json')).stdout);
  assert.deepEqual(purged, { purged_count: 1 });
  assert.equal((await client.jobs.get(dead[0]!)).status, 'pending');

  const workers = JSON.parse((await spool('workers', 'list', '--json')).stdout);
  assert.ok(Array.isArray(workers));
  const stats = await spool('stats');
  assert.equal(stats.code, 0, stats.stderr);
  assert.match(stats.stdout, new RegExp(`^Spool \\S+ at ${server.url.replace(/[.]/g, '\\.')}, up \\d+ s$`, 'm'));
  assert.match(stats.stdout, /^Last hour: \d+ created, \d+ completed, \d+ failed$/m);
  const statsJson = JSON.parse((await spool('stats', '--json')).stdout);
  assert.ok(statsJson.jobs.total >= 2);
});

test('against the real server: a wrong key and a --url with the API path get hints', async () => {
  const wrongKey = await spool('jobs', 'list', '--api-key', 'sk_test_not_a_real_key');
  assert.equal(wrongKey.code, 1);
  assert.match(wrongKey.stderr, /^spool: .*\(401\)$/m);
  assert.match(wrongKey.stderr, /^hint: The API key was refused\. Check --api-key \/ SPOOL_API_KEY/m);

  const withPath = await spool('--url', `${server.url}/api/v1/`, 'jobs', 'list');
  assert.equal(withPath.code, 1);
  assert.match(withPath.stderr, /^spool: Route GET \/api\/v1\/api\/v1\/jobs not found \(404 NOT_FOUND/m);
  assert.match(withPath.stderr, /^hint: --url should be the server's root URL \(like http:\/\/localhost:8080\), without "\/api\/v1"\.$/m);
});
