import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { FakeSpoolServer } from '../../../test-support/fake-spool-server.js';

const BIN = fileURLToPath(new URL('../bin/spool.js', import.meta.url));
let server: FakeSpoolServer;
let dir: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function spool(args: string[], options: { env?: Record<string, string>; stdin?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, SPOOL_URL: server.url, SPOOL_API_KEY: server.apiKey, NO_COLOR: '1', ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

function jsonOf(run: Run): any {
  assert.equal(run.code, 0, `exit ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

before(async () => {
  server = await new FakeSpoolServer().start();
  dir = mkdtempSync(join(tmpdir(), 'spool-cli-'));
});

after(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('enqueue one job, then list and get it in both output modes', async () => {
  const created = jsonOf(await spool(['--json', 'enqueue', 'emails', '{"to":"a@example.com","camelKey":1}', '--priority', '5', '--tags', '{"someTag":true}']));
  assert.equal(created.created, true);
  const job = server.job(created.id)!;
  assert.deepEqual(job.payload, { to: 'a@example.com', camelKey: 1 });
  assert.equal(job.priority, 5);
  assert.deepEqual(job.tags, { someTag: true });

  const human = await spool(['enqueue', 'emails']);
  assert.equal(human.code, 0);
  assert.match(human.stdout, /^Enqueued job [0-9a-f-]{36} on emails\.\n$/);

  const table = await spool(['jobs', 'list', '--queue', 'emails']);
  assert.equal(table.code, 0);
  const [header, ...rows] = table.stdout.trimEnd().split('\n');
  assert.match(header!, /^ID\s+QUEUE\s+STATUS\s+PRIORITY\s+RETRIES\s+CREATED\s+COMPLETED$/);
  assert.equal(rows.length, 2);
  assert.ok(rows.some((row) => row.startsWith(created.id) && /emails\s+pending\s+5\s+0/.test(row)));

  const listed = jsonOf(await spool(['jobs', 'list', '--json', '--limit', '1']));
  assert.equal(listed.length, 1);
  assert.equal(typeof listed[0].queue_name, 'string', 'JSON output uses the wire keys');

  const fetched = jsonOf(await spool(['jobs', 'get', created.id, '--json']));
  assert.equal(fetched.id, created.id);
  assert.deepEqual(fetched.payload, { to: 'a@example.com', camelKey: 1 }, 'payload keys untouched');
  const shown = await spool(['jobs', 'get', created.id]);
  assert.match(shown.stdout, /^queue_name\s+emails$/m);
  assert.match(shown.stdout, /^payload\s+\{"to":"a@example.com","camelKey":1\}$/m);
});

test('jobs cancel and retry', async () => {
  const pending = server.addJob('work', {});
  const cancelled = await spool(['jobs', 'cancel', pending.id]);
  assert.equal(cancelled.code, 0, cancelled.stderr);
  assert.equal(cancelled.stdout, `Cancelled job ${pending.id}.\n`);
  assert.equal(server.job(pending.id)!.status, 'cancelled');

  const again = await spool(['jobs', 'cancel', pending.id]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /^spool: Cannot cancel a cancelled job \(409 CONFLICT\)$/m);

  const running = server.addJob('work', {}, { status: 'processing' });
  const asked = await spool(['jobs', 'cancel', running.id, '--json']);
  assert.deepEqual(jsonOf(asked), { id: running.id, outcome: 'cancel_requested' });
  assert.ok(server.cancelRequested.has(running.id));

  const dead = server.addJob('work', {}, { status: 'deadletter' });
  const retried = jsonOf(await spool(['jobs', 'retry', dead.id, '--json']));
  assert.equal(retried.status, 'pending');
  assert.equal(server.job(dead.id)!.status, 'pending');
});

test('enqueue --file sends chunks through the bulk endpoint and summarises', async () => {
  const lines = Array.from({ length: 250 }, (_, i) => JSON.stringify({ n: i }));
  lines.splice(99, 0, '{not json');
  lines.splice(10, 0, '');
  const file = join(dir, 'jobs.ndjson');
  writeFileSync(file, `${lines.join('\n')}\n`);
  const before = server.calls('/api/v1/jobs/bulk').length;

  const run = await spool(['enqueue', 'bulkq', '--file', file, '--json', '--chunk-size', '100']);
  assert.equal(run.code, 1, 'a bad line makes the exit code non-zero');
  const summary = JSON.parse(run.stdout);
  assert.equal(summary.queue_name, 'bulkq');
  assert.equal(summary.total, 251);
  assert.equal(summary.created, 250);
  assert.equal(summary.existing, 0);
  assert.equal(summary.failed.length, 1);
  assert.equal(summary.failed[0].line, 101);
  assert.match(summary.failed[0].error, /not valid JSON/);
  const bulkCalls = server.calls('/api/v1/jobs/bulk').slice(before);
  assert.deepEqual(bulkCalls.map((c) => (c.body as { jobs: unknown[] }).jobs.length).sort(), [100, 100, 50]);
  const payloads = server.jobs.filter((job) => job.queue_name === 'bulkq').map((job) => (job.payload as { n: number }).n);
  assert.deepEqual(payloads.sort((a, b) => a - b), Array.from({ length: 250 }, (_, i) => i));

  const human = await spool(['enqueue', 'bulkq2', '--file', '-', '--envelope'], { stdin: '{"payload":{"a":1},"idempotency_key":"k1"}\n{"payload":{"a":1},"idempotency_key":"k1"}\n' });
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, /^Enqueued 2 of 2 jobs on bulkq2 in [\d.]+ s \(1 new, 1 already existed, 0 failed\)\.$/m);
  assert.equal(human.stderr, '', 'no progress bar when stderr is not a terminal');
});

test('dlq list, retry and purge', async () => {
  const a = server.addJob('dlqq', { a: 1 }, { status: 'deadletter' });
  const b = server.addJob('dlqq', { b: 1 }, { status: 'deadletter' });
  const list = jsonOf(await spool(['dlq', 'list', '--queue', 'dlqq', '--json']));
  assert.deepEqual(list.map((job: { id: string }) => job.id).sort(), [a.id, b.id].sort());

  const retried = await spool(['dlq', 'retry', a.id]);
  assert.equal(retried.code, 0);
  assert.match(retried.stdout, new RegExp(`^Retried 1 job\\(s\\):\\n${a.id}$`, 'm'));
  assert.equal(server.job(a.id)!.status, 'pending');

  const refused = await spool(['dlq', 'purge', '--queue', 'dlqq']);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /add --yes to confirm/);
  assert.equal(server.job(b.id)!.status, 'deadletter');

  const purged = jsonOf(await spool(['dlq', 'purge', '--queue', 'dlqq', '--yes', '--json']));
  assert.deepEqual(purged, { purged_count: 1 });
  assert.equal(server.job(b.id), undefined);
});

test('queues, schedules, workers and stats', async () => {
  server.addJob('reports', {});
  const paused = jsonOf(await spool(['queues', 'pause', 'reports', '--reason', 'deploy', '--json']));
  assert.equal(paused.paused, true);
  assert.equal(paused.reason, 'deploy');
  const queues = await spool(['queues', 'list']);
  assert.match(queues.stdout, /^reports\s+paused\s+1\s+/m);
  const resumed = await spool(['queues', 'resume', 'reports']);
  assert.match(resumed.stdout, /^Resumed queue reports/);

  const bad = await spool(['schedules', 'create', 'nightly', '--queue', 'reports']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /required option '-c, --cron <expression>' not specified/);
  const created = jsonOf(await spool(['schedules', 'create', 'nightly', '--cron', '0 0 3 * * *', '--queue', 'reports', '--payload', '{"kind":"nightly"}', '--json']));
  assert.equal(created.cron_expression, '0 0 3 * * *');
  const pausedSchedule = await spool(['schedules', 'pause', created.id]);
  assert.equal(pausedSchedule.stdout, `Schedule ${created.id} is paused.\n`);
  const triggered = jsonOf(await spool(['schedules', 'trigger', created.id, '--json']));
  assert.deepEqual(server.job(triggered.job_id)!.payload, { kind: 'nightly' });
  const schedules = await spool(['schedules', 'list']);
  assert.match(schedules.stdout, new RegExp(`^${created.id}\\s+nightly\\s+0 0 3 \\* \\* \\*\\s+UTC\\s+reports\\s+paused\\s+1\\s`, 'm'));

  await fetch(`${server.url}/api/v1/workers/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ queue_name: 'reports', hostname: 'box-1', max_concurrency: 8 }),
  });
  const workers = await spool(['workers', 'list']);
  assert.match(workers.stdout, /\sreports\s+box-1\s+healthy\s+0\/8\s/);

  const stats = await spool(['stats']);
  assert.equal(stats.code, 0, stats.stderr);
  assert.match(stats.stdout, /^Spool fake at http:\/\/127\.0\.0\.1:\d+, up 1 s$/m);
  assert.match(stats.stdout, /^total\s+\d+$/m);
  const statsJson = jsonOf(await spool(['stats', '--json']));
  assert.equal(typeof statsJson.jobs.total, 'number');
  assert.equal(typeof statsJson.dashboard.recent_activity.jobs_created_1h, 'number');
});

test('clear errors: unreachable server, wrong or missing key, bad input, unknown job', async () => {
  const probe = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => probe.on('listening', resolve));
  const deadUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise((resolve) => probe.close(resolve));
  const down = await spool(['jobs', 'list', '--url', deadUrl]);
  assert.equal(down.code, 1);
  assert.match(down.stderr, new RegExp(`^spool: cannot connect to Spool at ${deadUrl} \\(connection refused\\)$`, 'm'));
  assert.match(down.stderr, /^hint: Is Spool running\? Start it with `npm start`/m);

  const wrongKey = await spool(['stats', '--api-key', 'sk_test_wrong']);
  assert.equal(wrongKey.code, 1);
  assert.match(wrongKey.stderr, /^spool: Invalid API key \(401\)$/m);
  assert.match(wrongKey.stderr, /^hint: The API key was refused\. Check --api-key \/ SPOOL_API_KEY/m);

  const noKey = await spool(['stats'], { env: { SPOOL_API_KEY: '' } });
  assert.equal(noKey.code, 1);
  assert.match(noKey.stderr, /^hint: No API key given\. Pass --api-key or set SPOOL_API_KEY/m);

  const badJson = await spool(['enqueue', 'q', '{oops']);
  assert.equal(badJson.code, 2);
  assert.match(badJson.stderr, /^spool: payload is not valid JSON/m);

  const badStatus = await spool(['jobs', 'list', '--status', 'done']);
  assert.equal(badStatus.code, 2);
  assert.match(badStatus.stderr, /argument 'done' is invalid\. Allowed choices are pending, scheduled/);

  const missingFile = await spool(['enqueue', 'q', '--file', join(dir, 'nope.ndjson')]);
  assert.equal(missingFile.code, 2);
  assert.match(missingFile.stderr, /cannot read --file .*nope\.ndjson: no such file/);

  const unknown = await spool(['jobs', 'get', 'no-such-job']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /^spool: Job not found \(404 NOT_FOUND\)$/m);
});
