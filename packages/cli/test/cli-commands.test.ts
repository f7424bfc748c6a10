/**
 * The CLI's commands, against the real server: snake_case `jobs get`, schedules by name and
 * `schedules delete`, `queues pause` refusing a typo, retrying what is not dead-lettered,
 * JSON errors with --json, workflow / webhook / API-key commands, DLQ replay and purge in batches
 * with progress.
 */
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

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function spool(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const childEnv: Record<string, string | undefined> = { ...process.env, SPOOL_URL: server.url, SPOOL_API_KEY: server.apiKey, ...env };
    // Any value of SPOOL_PROGRESS (even empty) turns progress bars on.
    if (!('SPOOL_PROGRESS' in env)) delete childEnv.SPOOL_PROGRESS;
    const child = spawn(process.execPath, [BIN, ...args], { env: childEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end();
  });
}

function ok(run: Run): Run {
  assert.equal(run.code, 0, `exit ${run.code}: ${run.stderr}`);
  return run;
}

/** `n` dead letters on `queue`, made the way a worker makes them. */
async function deadLetters(queue: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  if (n > 0) {
    const created = await client.jobs.bulk({ queueName: queue, defaultMaxRetries: 0, jobs: Array.from({ length: n }, (_, i) => ({ payload: { i } })) });
    ids.push(...created.succeeded.map((s) => s.jobId));
  }
  await failAll(queue);
  return ids;
}

/** Claims and fails every pending job of `queue` (max_retries 0: they are dead-lettered). */
async function failAll(queue: string): Promise<void> {
  for (;;) {
    const claimed = await client.jobs.claim({ queueName: queue, workerId: 'cli-test', limit: 100 });
    if (claimed.length === 0) break;
    await client.jobs.failMany({ workerId: 'cli-test', items: claimed.map((job) => ({ jobId: job.id, leaseId: job.leaseId, error: `broken ${job.id}` })) });
  }
}

before(async () => {
  server = await startTestServer('cli_commands');
  client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
  dir = mkdtempSync(join(tmpdir(), 'spool-cli-commands-'));
});

after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

test('jobs get prints the API\'s snake_case keys, payload keys untouched', async () => {
  const { id } = await client.jobs.create({ queueName: 'cmd-get', payload: { camelKey: 1 } });
  const shown = ok(await spool(['jobs', 'get', id])).stdout;
  assert.match(shown, /^queue_name\s+cmd-get$/m);
  assert.match(shown, /^created_at\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m);
  assert.match(shown, /^payload\s+\{"camelKey":1\}$/m);
  assert.doesNotMatch(shown, /^queueName/m);
});

test('schedules by name: pause, resume, trigger, delete; unknown and ambiguous names are clear errors', async () => {
  ok(await spool(['schedules', 'create', 'cmd-nightly', '--cron', '0 0 3 * * *', '--queue', 'cmd-sched', '--payload', '{"kind":"n"}']));
  const [schedule] = (await client.schedules.list()).filter((s) => s.name === 'cmd-nightly');
  assert.ok(schedule);

  assert.equal(ok(await spool(['schedules', 'pause', 'cmd-nightly'])).stdout, `Schedule ${schedule.id} is paused.\n`);
  assert.equal((await client.schedules.get(schedule.id)).isActive, false);
  assert.equal(JSON.parse(ok(await spool(['schedules', 'resume', 'cmd-nightly', '--json'])).stdout).is_active, true);
  const triggered = JSON.parse(ok(await spool(['schedules', 'trigger', 'cmd-nightly', '--json'])).stdout);
  assert.deepEqual((await client.jobs.get(triggered.job_id)).payload, { kind: 'n' });

  const unknown = await spool(['schedules', 'pause', 'cmd-nigthly']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /^spool: no schedule has the id or name "cmd-nigthly"; `spool schedules list` shows them$/m);

  ok(await spool(['schedules', 'create', 'cmd-twice', '--cron', '0 0 3 * * *', '--queue', 'cmd-a']));
  ok(await spool(['schedules', 'create', 'cmd-twice', '--cron', '0 0 4 * * *', '--queue', 'cmd-b']));
  const ambiguous = await spool(['schedules', 'trigger', 'cmd-twice']);
  assert.equal(ambiguous.code, 1);
  assert.match(ambiguous.stderr, /^spool: 2 schedules are named "cmd-twice" \(\S+ on cmd-\w, \S+ on cmd-\w\): give the id instead$/m);

  const unconfirmed = await spool(['schedules', 'delete', 'cmd-nightly']);
  assert.equal(unconfirmed.code, 2);
  assert.match(unconfirmed.stderr, /add --yes to confirm/);
  assert.equal(ok(await spool(['schedules', 'delete', 'cmd-nightly', '--yes'])).stdout, `Deleted schedule ${schedule.id}.\n`);
  await assert.rejects(client.schedules.get(schedule.id), { status: 404 });
  const byId = (await client.schedules.list()).find((s) => s.name === 'cmd-twice')!;
  assert.deepEqual(JSON.parse(ok(await spool(['schedules', 'delete', byId.id, '--yes', '--json'])).stdout), { id: byId.id, deleted: true });
});

test('queues pause refuses a name with no jobs and no config unless --create', async () => {
  await client.jobs.create({ queueName: 'cmd-real', payload: {} });
  const typo = await spool(['queues', 'pause', 'cmd-rael']);
  assert.equal(typo.code, 1);
  assert.match(typo.stderr, /^spool: queue "cmd-rael" has no jobs and no configuration, so pausing it would create a new queue; .*add --create/m);
  assert.equal((await client.queues.list()).some((q) => q.queueName === 'cmd-rael'), false, 'no config row was created');

  assert.equal(ok(await spool(['queues', 'pause', 'cmd-real'])).stdout, 'Paused queue cmd-real.\n');
  ok(await spool(['queues', 'resume', 'cmd-real']));
  // Configured (it has a row now) but without jobs: still a queue.
  await client.queues.updateConfig('cmd-configured', { maxRetries: 2 });
  ok(await spool(['queues', 'pause', 'cmd-configured']));
  assert.equal(ok(await spool(['queues', 'pause', 'cmd-brand-new', '--create'])).stdout, 'Paused queue cmd-brand-new.\n');
});

test('dlq retry of an id that is not dead-lettered says so and exits 1; dlq list shows the error', async () => {
  const [dead] = await deadLetters('cmd-dlq', 1);
  const { id: pending } = await client.jobs.create({ queueName: 'cmd-dlq', payload: {} });

  const listed = ok(await spool(['dlq', 'list', '--queue', 'cmd-dlq'])).stdout;
  assert.match(listed.split('\n')[0]!, /\sERROR$/);
  assert.match(listed, new RegExp(`^${dead}\\s.*\\sbroken ${dead}$`, 'm'));

  const notDead = await spool(['dlq', 'retry', pending]);
  assert.equal(notDead.code, 1);
  assert.equal(notDead.stdout, '');
  assert.match(notDead.stderr, new RegExp(`^spool: this job is not dead-lettered, nothing done for it: ${pending} \\(pending\\)\\. Only dead-lettered jobs are replayed`, 'm'));

  const mixed = await spool(['dlq', 'retry', dead!, '00000000-0000-4000-8000-000000000000']);
  assert.equal(mixed.code, 1);
  assert.equal(mixed.stdout, `Retried 1 job(s):\n${dead}\n`);
  assert.match(mixed.stderr, /not dead-lettered, nothing done for it: 00000000-0000-4000-8000-000000000000 \(not found\)/);
  assert.equal((await client.jobs.get(dead!)).status, 'pending');
});

test('--json failures are one JSON object on stderr: API refusals, CLI refusals, usage errors', async () => {
  const missing = await spool(['jobs', 'get', '00000000-0000-4000-8000-000000000000', '--json']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stdout, '');
  const apiError = JSON.parse(missing.stderr);
  assert.equal(apiError.code, 'NOT_FOUND');
  assert.equal(apiError.status, 404);
  assert.equal(typeof apiError.message, 'string');
  assert.match(apiError.request_id, /\S/);

  const { id } = await client.jobs.create({ queueName: 'cmd-json', payload: {} });
  const refused = await spool(['--json', 'dlq', 'retry', id]);
  assert.equal(refused.code, 1);
  const cliError = JSON.parse(refused.stderr);
  assert.equal(cliError.code, 'NOT_DEAD_LETTERED');
  assert.deepEqual(cliError.details.not_retried, [{ id, status: 'pending' }]);

  const usage = await spool(['jobs', 'list', '--status', 'done', '--json']);
  assert.equal(usage.code, 2);
  const usageError = JSON.parse(usage.stderr);
  assert.equal(usageError.code, 'USAGE_ERROR');
  assert.match(usageError.message, /argument 'done' is invalid/);

  const wrongKey = await spool(['stats', '--json'], { SPOOL_API_KEY: 'sk_test_nope' });
  assert.equal(wrongKey.code, 1);
  const auth = JSON.parse(wrongKey.stderr);
  assert.equal(auth.status, 401);
  assert.match(auth.hint, /--api-key/);
});

test('workflows: create from a file, list, get with its jobs, cancel', async () => {
  const file = join(dir, 'workflow.json');
  writeFileSync(file, JSON.stringify({
    name: 'cmd-etl',
    jobs: [
      { key: 'extract', queue_name: 'cmd-wf', payload: { step: 1 } },
      { key: 'load', queue_name: 'cmd-wf', payload: { step: 2 }, depends_on: ['extract'] },
      { key: 'report', queue_name: 'cmd-wf', payload: { step: 3 }, depends_on: ['extract', 'load'], on_parent_failure: { extract: 'continue' } },
    ],
  }));
  const created = JSON.parse(ok(await spool(['workflows', 'create', '--file', file, '--json'])).stdout);
  assert.equal(created.job_ids.length, 3);
  const id = created.workflow_id as string;

  const list = ok(await spool(['workflows', 'list'])).stdout;
  assert.match(list, new RegExp(`^${id}\\s+cmd-etl\\s+\\w+\\s+0/3\\s`, 'm'));
  const shown = ok(await spool(['workflows', 'get', id])).stdout;
  assert.match(shown, /^name\s+cmd-etl$/m);
  assert.match(shown, /^load\s+\S+\s+cmd-wf\s+\w+\s+extract\s+-$/m);
  assert.match(shown, /^report\s+\S+\s+cmd-wf\s+\w+\s+(extract\(continue\),load|load,extract\(continue\))\s+-$/m);
  const asJson = JSON.parse(ok(await spool(['workflows', 'get', id, '--json'])).stdout);
  assert.equal(asJson.jobs.length, 3);
  assert.equal(asJson.total_jobs, 3);
  const extractId = created.job_ids.find((j: { key: string }) => j.key === 'extract').job_id;
  assert.equal(asJson.jobs.find((j: { key: string }) => j.key === 'report').on_parent_failure[extractId], 'continue');

  assert.equal(ok(await spool(['workflows', 'cancel', id])).stdout, `Workflow ${id} is cancelled.\n`);
  const badFile = await spool(['workflows', 'create', '--file', join(dir, 'nope.json')]);
  assert.equal(badFile.code, 2);
  assert.match(badFile.stderr, /cannot read --file .*nope\.json: no such file/);
});

test('webhooks: create, list, get, deliveries, delete', async () => {
  const created = JSON.parse(ok(await spool(['webhooks', 'create', 'cmd-hook', '--endpoint', 'https://example.com/hook', '--events', 'job.completed,job.failed', '--json'])).stdout);
  assert.deepEqual(created.events, ['job.completed', 'job.failed']);
  assert.match(ok(await spool(['webhooks', 'list'])).stdout, new RegExp(`^${created.id}\\s+cmd-hook\\s+https://example\\.com/hook\\s+job\\.completed,job\\.failed\\s+enabled\\s+0`, 'm'));
  assert.match(ok(await spool(['webhooks', 'get', created.id])).stdout, /^url\s+https:\/\/example\.com\/hook$/m);
  assert.equal(ok(await spool(['webhooks', 'deliveries', created.id])).stdout, 'No deliveries yet.\n');
  const badEvent = await spool(['webhooks', 'create', 'cmd-bad', '--endpoint', 'https://example.com/x', '--events', 'job.done']);
  assert.equal(badEvent.code, 1);
  assert.match(badEvent.stderr, /unknown event "job\.done"/);
  assert.equal(ok(await spool(['webhooks', 'delete', created.id, '--yes'])).stdout, `Deleted webhook ${created.id}.\n`);
  assert.deepEqual(await client.webhooks.list(), []);
});

test('api-keys: create with a role and queues, list, get, delete revokes', async () => {
  const created = ok(await spool(['api-keys', 'create', 'cmd-producer', '--role', 'producer', '--queues', 'cmd-k1,cmd-k2']));
  const [, id, secret] = /^Created API key (\S+) \(cmd-producer, producer\)\. Its secret, shown only now:\n(\S+)$/m.exec(created.stdout) ?? [];
  assert.ok(id && secret, created.stdout);
  const keyClient = new SpoolClient({ baseUrl: server.url, apiKey: secret });
  assert.ok(await keyClient.jobs.create({ queueName: 'cmd-k1', payload: {} }));

  assert.match(ok(await spool(['api-keys', 'list'])).stdout, new RegExp(`^${id}\\s+cmd-producer\\s+producer\\s+cmd-k1,cmd-k2\\s+active\\s`, 'm'));
  const got = JSON.parse(ok(await spool(['api-keys', 'get', id, '--json'])).stdout);
  assert.equal(got.role, 'producer');
  assert.equal('key' in got, false);
  const badRole = await spool(['api-keys', 'create', 'x', '--role', 'root']);
  assert.equal(badRole.code, 2);

  assert.equal(ok(await spool(['api-keys', 'delete', id, '--yes'])).stdout, `Revoked API key ${id}.\n`);
  await assert.rejects(keyClient.jobs.create({ queueName: 'cmd-k1', payload: {} }), { status: 401 });
});

test('dlq retry and purge go past one request\'s batch and show progress with --progress', async () => {
  const ids = await deadLetters('cmd-many', 230);
  const retried = await spool(['dlq', 'retry', '--queue', 'cmd-many', '--progress']);
  assert.equal(retried.code, 0, retried.stderr);
  assert.match(retried.stdout, /^Retried 230 job\(s\):/);
  assert.match(retried.stderr, /230 jobs\s+[\d,]+\/s\n$/);
  assert.equal((await client.jobs.stats()).deadletter, 0);

  // Dead again, then replayed by id: 230 ids are three requests of at most 100.
  await failAll('cmd-many');
  const byId = JSON.parse(ok(await spool(['dlq', 'retry', ...ids, '--json'])).stdout);
  assert.equal(byId.retried_count, 230);
  await failAll('cmd-many');

  const limited = JSON.parse(ok(await spool(['dlq', 'purge', '--queue', 'cmd-many', '--limit', '30', '--yes', '--json'])).stdout);
  assert.deepEqual(limited, { purged_count: 30 });
  const purged = await spool(['dlq', 'purge', '--yes', '--progress']);
  assert.equal(purged.code, 0, purged.stderr);
  assert.equal(purged.stdout, 'Purged 200 job(s).\n');
  assert.match(purged.stderr, /\[#{30}\] 100%\s+200\/200\s/);
  assert.equal((await client.jobs.stats()).deadletter, 0);
});
