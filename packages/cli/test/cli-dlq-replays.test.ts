/** `spool dlq replay` and `spool dlq replays list|show|cancel` against the real server. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { loadDeadLetters } from '../../../test-support/job-fixtures.js';

const BIN = fileURLToPath(new URL('../bin/spool.js', import.meta.url));
let server: TestServer;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function spool(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const childEnv: Record<string, string | undefined> = { ...process.env, SPOOL_URL: server.url, SPOOL_API_KEY: server.apiKey, ...env };
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

const deadLetters = (queue: string, count: number) => loadDeadLetters(server.spool.db, server.organizationId, queue, count);

before(async () => {
  server = await startTestServer('cli_replays');
});
after(async () => server.close());

test('dlq replay --wait follows a paced replay with progress lines when stderr is no terminal', async () => {
  const ids = await deadLetters('cli-replay', 100);
  const run = ok(await spool(['dlq', 'replay', '--queue', 'cli-replay', '--per-second', '100', '--priority', '4', '--wait', '--interval', '100']));
  assert.match(run.stdout, /^Replay [0-9a-f-]{36} completed: 100 job\(s\) replayed\.\n$/);
  const lines = run.stderr.trim().split('\n');
  assert.ok(lines.length >= 2, `progress lines: ${run.stderr}`);
  assert.match(lines[0]!, /^replay [0-9a-f-]{36} running: \d+\/100 replayed \(\d+%\)/);
  assert.match(lines.at(-1)!, /^replay [0-9a-f-]{36} completed: 100\/100 replayed \(100%\)/);
  assert.ok(!run.stderr.includes('\r'), 'no bar redraws in a log');
  const job = await server.request('GET', `/api/v1/jobs/${ids[0]}`);
  assert.deepEqual([job.body.status, job.body.priority], ['pending', 4]);

  // With --progress: the bar, redrawn, ending at 100%.
  await deadLetters('cli-replay-bar', 40);
  const bar = ok(await spool(['dlq', 'replay', '--queue', 'cli-replay-bar', '--per-second', '200', '--wait', '--interval', '50', '--progress']));
  assert.match(bar.stderr, /\r\x1b\[2K\[#{30}\] 100%\s+40\/40/);
  assert.match(bar.stdout, /completed: 40 job\(s\) replayed/);
});

test('dlq replay without --wait starts it; replays list, show and cancel', async () => {
  await deadLetters('cli-replay-slow', 50);
  const started = JSON.parse(ok(await spool(['--json', 'dlq', 'replay', '--queue', 'cli-replay-slow', '--per-second', '1'])).stdout);
  assert.equal(started.status, 'running');
  assert.equal(started.total, 50);
  assert.equal(started.per_second, 1);

  const human = ok(await spool(['dlq', 'replays', 'list'])).stdout;
  assert.match(human, /^ID\s+STATUS\s+QUEUE\s+DONE\s+SKIPPED\s+%\s+PACE\s+CREATED\s+BY/);
  assert.match(human, new RegExp(`^${started.id}\\s+running\\s+cli-replay-slow\\s+\\d+/50\\s+0\\s+\\d+\\s+1/s`, 'm'));
  const listed = JSON.parse(ok(await spool(['--json', 'dlq', 'replays', 'list', '--status', 'running'])).stdout);
  assert.ok(listed.some((r: { id: string }) => r.id === started.id));

  const shown = ok(await spool(['dlq', 'replays', 'show', started.id])).stdout;
  assert.match(shown, /^id\s+[0-9a-f-]{36}$/m);
  assert.match(shown, /^per_second\s+1$/m);
  assert.match(shown, /replay [0-9a-f-]{36} running: \d+\/50 replayed/);

  const cancelled = ok(await spool(['dlq', 'replays', 'cancel', started.id]));
  assert.match(cancelled.stdout, /^Replay [0-9a-f-]{36} cancelled by api_key:[0-9a-f-]{36}: \d+ of 50 job\(s\) replayed, \d+ left in the DLQ\.\n$/);
  // Waiting on a cancelled replay: exit 1, saying so.
  const waited = await spool(['dlq', 'replays', 'show', started.id, '--wait']);
  assert.equal(waited.code, 0, 'a finished replay is only shown');
  const again = await spool(['dlq', 'replay', '--queue', 'cli-replay-nothing', '--wait']);
  assert.equal(again.code, 0);
  assert.match(again.stdout, /^Nothing to replay/);

  const completed = JSON.parse(ok(await spool(['--json', 'dlq', 'replays', 'list', '--status', 'completed'])).stdout)[0];
  const late = await spool(['dlq', 'replays', 'cancel', completed.id]);
  assert.equal(late.code, 1);
  assert.match(late.stderr, /only a running replay can be cancelled \(409 CONFLICT/);
  const bad = await spool(['dlq', 'replay', '--per-second', '0']);
  assert.equal(bad.code, 2);
  const badDate = await spool(['dlq', 'replay', '--created-after', 'soon']);
  assert.equal(badDate.code, 2);
  assert.match(badDate.stderr, /--created-after is not a date/);
});

test('a replay cancelled while waited for exits 1', async () => {
  await deadLetters('cli-replay-stop', 30);
  const waiting = spool(['dlq', 'replay', '--queue', 'cli-replay-stop', '--per-second', '1', '--wait', '--interval', '50']);
  let id: string | undefined;
  for (let i = 0; i < 200 && !id; i++) {
    const running = await server.request('GET', '/api/v1/jobs/dlq/replays?status=running');
    id = running.body.find((r: { queue_name: string }) => r.queue_name === 'cli-replay-stop')?.id;
    if (!id) await new Promise((r) => setTimeout(r, 25));
  }
  assert.ok(id, 'the replay started');
  assert.equal((await server.request('DELETE', `/api/v1/jobs/dlq/replays/${id}`)).status, 200);
  const run = await waiting;
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stdout, /^Replay [0-9a-f-]{36} cancelled by api_key:/);
  assert.match(run.stderr, /replay [0-9a-f-]{36} cancelled: /);
});
