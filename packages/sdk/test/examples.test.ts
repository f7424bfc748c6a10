/**
 * The examples in examples/ are end-to-end tests: each runs as its own
 * process, exactly as the README says to run it, against a real server, and
 * must exit 0 with the lines that show its scenario happened.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let server: TestServer;

before(async () => {
  server = await startTestServer('examples');
});

after(() => server.close());

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs `node --import tsx examples/<file>` from the repository root (what
 * `npx tsx examples/<file>` does). `onLine` sees each stdout line and may
 * signal the child.
 */
function runExample(file: string, options: { args?: string[]; env?: Record<string, string | undefined>; onLine?: (line: string, child: ReturnType<typeof spawn>) => void } = {}): Promise<Run> {
  const started = Date.now();
  const env: NodeJS.ProcessEnv = { ...process.env, SPOOL_URL: server.url, SPOOL_API_KEY: server.apiKey };
  for (const [key, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `examples/${file}`, ...(options.args ?? [])], { cwd: ROOT, env });
    let stdout = '';
    let stderr = '';
    let partial = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const line of lines) options.onLine?.(line, child);
    });
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

function succeeded(run: Run, title: string): void {
  assert.equal(run.code, 0, `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  assert.match(run.stdout, new RegExp(`^OK: ${title}$`, 'm'));
}

// The examples use their own queues, so they can run side by side.
describe('examples', { concurrency: 3 }, () => {
  it('enqueue-and-process.ts', async () => {
    const run = await runExample('enqueue-and-process.ts');
    succeeded(run, 'enqueue and process');
    assert.match(run.stdout, /^enqueued (\S+) \(created: true\); the same request again → \1 \(created: false\)$/m);
    assert.match(run.stdout, /^bulk enqueue: 3 created, 0 failed$/m);
    assert.equal(run.stdout.match(/ completed \S+ → \{"messageId":"msg-/g)?.length, 4, run.stdout);
    assert.match(run.stdout, /status completed, result \{.*"to":"ada@example\.com"/);
  });

  it('retries-and-dlq.ts', async () => {
    const run = await runExample('retries-and-dlq.ts');
    succeeded(run, 'retries and the dead-letter queue');
    assert.match(run.stdout, /attempt 1 of \S+ failed: payment provider unavailable \(503\) → will retry after a backoff/);
    assert.match(run.stdout, /attempt 2 of \S+ failed: payment provider unavailable \(503\) → will retry after a backoff/);
    assert.match(run.stdout, /attempt 3 of \S+ failed: payment provider unavailable \(503\) → moved to the dead-letter queue/);
    assert.match(run.stdout, /attempt 1 of \S+ failed: amount must be positive, got -5 → moved to the dead-letter queue/);
    assert.match(run.stdout, /^charge: deadletter after 3 attempts/m);
    assert.match(run.stdout, /replayed 1 job\(s\) from the dead-letter queue/);
    assert.match(run.stdout, /charge completed: \{"chargedCents":4200,"attempt":1\}/);
    assert.match(run.stdout, /^purged 1 job\(s\) from the dead-letter queue$/m);
  });

  it('cancellation.ts', async () => {
    const run = await runExample('cancellation.ts');
    succeeded(run, 'cancellation');
    assert.match(run.stdout, /scheduled in an hour: cancel → cancelled; status now cancelled$/m);
    assert.match(run.stdout, /while it runs → cancel_requested$/m);
    assert.match(run.stdout, /handler: signal aborted at chunk \d+ \(JobCancelledError\)/);
    const latency = Number(/^the handler stopped (\d+) ms after the cancel request$/m.exec(run.stdout)?.[1]);
    assert.ok(latency < 1000, `the realtime stream should bring the cancellation within a second, took ${latency} ms`);
    assert.match(run.stdout, /status cancelled, retries used 0$/m);
  });

  it('cron.ts', async () => {
    const run = await runExample('cron.ts');
    succeeded(run, 'cron schedules');
    assert.match(run.stdout, /"0 30 9 \* \* 1-5" in America\/New_York: next run \S+ \(UTC\) = (Mon|Tue|Wed|Thu|Fri) \S+ 09:30:00 /);
    assert.equal(run.stdout.match(/ from the schedule, enqueued at /g)?.length, 2, run.stdout);
    assert.match(run.stdout, /^deleted 2 schedule\(s\)$/m);
    const left = await server.request('GET', '/api/v1/schedules');
    assert.deepEqual(left.body.filter((s: { name: string }) => s.name.startsWith('example-cron-')), [], 'the example deletes its schedules');
  });

  // Both runs use the example's queue: one after the other.
  it('graceful-shutdown.ts: one SIGTERM drains; with --wait, two real SIGTERMs skip the grace period', async () => {
    const run = await runExample('graceful-shutdown.ts');
    succeeded(run, 'graceful shutdown');
    assert.match(run.stdout, /SIGTERM: no new jobs; running ones get 2000 ms to finish/);
    assert.match(run.stdout, /transcode of holiday\.mov interrupted at \d+% \(WorkerShutdownError\)/);
    assert.match(run.stdout, /status pending, retries used 0$/m);
    assert.match(run.stdout, /\[v2\] completed transcode holiday\.mov/);
    assert.match(run.stdout, /^all 4 jobs completed exactly once; nothing lost$/m);

    let signalled = false;
    const waited = await runExample('graceful-shutdown.ts', {
      args: ['--wait'],
      onLine: (line, child) => {
        if (!line.startsWith('waiting for SIGTERM')) return;
        signalled = true;
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGTERM'), 100);
      },
    });
    succeeded(waited, 'graceful shutdown');
    assert.ok(signalled, 'the example said it was waiting');
    assert.match(waited.stdout, /SIGTERM again: stopping now/);
    // The second signal cut the 2 s grace short: even the 0.8 s thumbnails were interrupted and handed back.
    assert.equal(waited.stdout.match(/ interrupted at \d+% \(WorkerShutdownError\)/g)?.length, 4, waited.stdout);
    assert.equal(waited.stdout.match(/status pending, retries used 0$/gm)?.length, 4, waited.stdout);
    assert.match(waited.stdout, /^all 4 jobs completed exactly once; nothing lost$/m);
  });
});

describe('examples without a usable server', () => {
  it('say how to get an API key when SPOOL_API_KEY is missing', async () => {
    const run = await runExample('enqueue-and-process.ts', { env: { SPOOL_API_KEY: undefined } });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^SPOOL_API_KEY is not set\.$/m);
    assert.match(run.stderr, /on its first start it prints a development API key/);
  });

  it('say the key was refused, and that the server is unreachable', async () => {
    const refused = await runExample('cron.ts', { env: { SPOOL_API_KEY: 'sk_test_wrong' } });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^FAILED: Spool refused SPOOL_API_KEY/m);

    const probe = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => probe.once('listening', resolve));
    const deadUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    await new Promise((resolve) => probe.close(resolve));
    const down = await runExample('cancellation.ts', { env: { SPOOL_URL: deadUrl } });
    assert.equal(down.code, 1);
    assert.match(down.stderr, new RegExp(`^FAILED: cannot reach Spool at ${deadUrl} .*Is it running\\? Start it with \`npm start\``, 'm'));
  });
});
