/**
 * `spool outbox relay` as real processes against a real Spool server and an
 * "application" database of its own: SIGKILLed at any point it still turns
 * every outbox row into exactly one job, in order per key; two relays side by
 * side never send a row twice.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { enqueueToOutbox, ensureOutboxTable } from '@spool/sdk';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const BIN = fileURLToPath(new URL('../bin/spool.js', import.meta.url));
let server: TestServer;
let app: TestDatabase;
let outboxId: string;

before(async () => {
  [server, app] = await Promise.all([startTestServer('outbox_cli'), createTestDatabase('outbox_cli_app')]);
  await ensureOutboxTable(app.pool);
  outboxId = (await app.pool.query<{ outbox_id: string }>('SELECT outbox_id::text FROM spool_outbox_meta')).rows[0]!.outbox_id;
});

after(async () => {
  await app.drop();
  await server.close();
});

const running = new Set<ChildProcessWithoutNullStreams>();

beforeEach(async () => {
  await app.pool.query('TRUNCATE spool_outbox');
});

afterEach(async () => {
  // A failed test must not leave relays behind to disturb the next one.
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Relay {
  child: ChildProcessWithoutNullStreams;
  events: Record<string, any>[];
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first event of that name. */
  next(event: string, timeoutMs?: number): Promise<Record<string, any>>;
}

function startRelay(args: string[], env: Record<string, string> = {}): Relay {
  const child = spawn(process.execPath, [BIN, '--json', 'outbox', 'relay', '--database-url', app.url, ...args], {
    env: { ...process.env, SPOOL_URL: server.url, SPOOL_API_KEY: server.apiKey, ...env },
  });
  running.add(child);
  child.on('exit', () => running.delete(child));
  const events: Record<string, any>[] = [];
  let buffered = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      events.push(JSON.parse(buffered.slice(0, nl)));
      buffered = buffered.slice(nl + 1);
    }
  });
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return {
    child,
    events,
    stderr: () => stderr,
    exited,
    async next(event, timeoutMs = 15_000) {
      for (const started = Date.now(); Date.now() - started < timeoutMs; await sleep(10)) {
        const found = events.find((e) => e.event === event);
        if (found) return found;
        if (child.exitCode !== null || child.signalCode !== null) break;
      }
      throw new Error(`no "${event}" event from the relay; stderr: ${stderr}; events: ${JSON.stringify(events)}`);
    },
  };
}

async function spoolJobs(queue: string): Promise<{ id: string; idempotency_key: string; payload: { key: string | null; seq: number } }[]> {
  const result = await server.database.pool.query(
    'SELECT id::text, idempotency_key, payload FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 ORDER BY created_at, id',
    [server.organizationId, queue],
  );
  return result.rows;
}

async function forwardedCount(): Promise<number> {
  return (await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM spool_outbox WHERE forwarded_at IS NOT NULL')).rows[0]!.n;
}

/** Writes `rows` jobs in transactions of `perTransaction`: keys k0..k{keys-1} and every third row without a key. */
async function writeRows(queue: string, rows: number, keys: number, perTransaction: number, pauseMs = 0): Promise<void> {
  const seqByKey = new Map<string | null, number>();
  for (let start = 0; start < rows; start += perTransaction) {
    const client = await app.pool.connect();
    try {
      await client.query('BEGIN');
      for (let n = start; n < Math.min(rows, start + perTransaction); n++) {
        const key = n % 3 === 2 ? null : `k${n % keys}`;
        const seq = (seqByKey.get(key) ?? 0) + 1;
        seqByKey.set(key, seq);
        await enqueueToOutbox(client, { queueName: queue, payload: { key, seq }, ...(key ? { orderingKey: key } : {}) });
      }
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    if (pauseMs > 0) await sleep(pauseMs);
  }
}

/** Every outbox row became exactly one job (the one with its derived key), and each key's jobs were created in outbox order. */
async function assertExactlyOnceInOrder(queue: string, rows: number): Promise<void> {
  const outbox = (await app.pool.query<{ id: string; spool_job_id: string | null; forwarded_at: Date | null }>('SELECT id::text, spool_job_id, forwarded_at FROM spool_outbox ORDER BY id')).rows;
  assert.equal(outbox.length, rows);
  assert.ok(outbox.every((r) => r.forwarded_at && r.spool_job_id), 'every row forwarded');
  const jobs = await spoolJobs(queue);
  assert.equal(jobs.length, rows, 'one job per row');
  const byKey = new Map(jobs.map((j) => [j.idempotency_key, j]));
  assert.equal(byKey.size, rows, 'one job per derived idempotency key');
  for (const row of outbox) assert.equal(byKey.get(`outbox:${outboxId}:${row.id}`)?.id, row.spool_job_id, `row ${row.id} → its job`);
  const seen = new Map<string, number>();
  for (const job of jobs) {
    if (job.payload.key === null) continue;
    const last = seen.get(job.payload.key) ?? 0;
    assert.equal(job.payload.seq, last + 1, `key ${job.payload.key}: job ${job.payload.seq} created after ${last}`);
    seen.set(job.payload.key, job.payload.seq);
  }
}

test('SIGKILLed after sending and before marking, and at random points, the relay still makes each row exactly one job, in order per key', { timeout: 60_000 }, async () => {
  const ROWS = 300;
  await writeRows('ob-kill', ROWS, 8, 25);
  const args = ['--batch-size', '20', '--rows-per-key', '4', '--poll-ms', '20'];
  const kills = ['after-send', 'random', 'after-send', 'random', 'random'];
  for (const kill of kills) {
    if ((await forwardedCount()) === ROWS) break;
    if (kill === 'after-send') {
      // A SHARE lock lets the relay read and lock rows but not mark them: it sends a batch, then waits on its UPDATE.
      const blocker = await app.pool.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query('LOCK TABLE spool_outbox IN SHARE MODE');
        const relay = startRelay(args);
        await relay.next('started');
        // Spool answered for the batch: the relay waits to mark it forwarded.
        for (let waited = 0; ; waited += 20) {
          assert.ok(waited < 15_000, `the relay never waited on its mark; stderr: ${relay.stderr()}`);
          const marking = await app.pool.query(
            "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'spool-outbox-relay' AND wait_event_type = 'Lock' AND query LIKE '%UPDATE spool_outbox o%SET forwarded_at = now()%'",
          );
          if (marking.rowCount) break;
          await sleep(20);
        }
        relay.child.kill('SIGKILL');
        assert.equal((await relay.exited).signal, 'SIGKILL');
        await blocker.query('ROLLBACK');
        // Sent but not marked: Spool has jobs the outbox does not know it sent.
        assert.ok((await spoolJobs('ob-kill')).length > (await forwardedCount()));
      } finally {
        blocker.release();
      }
    } else {
      // Somewhere in the middle of the work: after a few more rows were marked, plus a random moment.
      const target = Math.min(ROWS - 40, (await forwardedCount()) + 20 + Math.floor(Math.random() * 40));
      const relay = startRelay(args);
      await relay.next('started');
      while ((await forwardedCount()) < target && relay.child.exitCode === null) await sleep(2);
      await sleep(Math.floor(Math.random() * 15));
      relay.child.kill('SIGKILL');
      await relay.exited;
    }
  }
  assert.ok((await forwardedCount()) < ROWS, 'the kills interrupted the work');

  const last = startRelay([...args, '--once']);
  const done = await last.next('drained', 30_000);
  assert.equal((await last.exited).code, 0, last.stderr());
  assert.equal(done.waiting, 0);
  await assertExactlyOnceInOrder('ob-kill', ROWS);
});

test('two relays side by side never send a row twice and keep each key\'s order', { timeout: 60_000 }, async () => {
  const ROWS = 300;
  const args = ['--batch-size', '5', '--rows-per-key', '2', '--poll-ms', '20', '--log-interval', '200ms'];
  const relays = [startRelay(args), startRelay(args)];
  await Promise.all(relays.map((r) => r.next('started')));
  await writeRows('ob-two', ROWS, 6, 10, 5);
  for (let waited = 0; (await forwardedCount()) < ROWS; waited += 50) {
    assert.ok(waited < 30_000, `not all rows forwarded; stderr: ${relays.map((r) => r.stderr()).join('\n')}`);
    await sleep(50);
  }
  for (const relay of relays) relay.child.kill('SIGTERM');
  const stopped = await Promise.all(relays.map((r) => r.next('stopped')));
  for (const relay of relays) assert.equal((await relay.exited).code, 0, relay.stderr());
  assert.equal(stopped[0]!.forwarded + stopped[1]!.forwarded, ROWS);
  assert.deepEqual(stopped.map((s) => s.existing), [0, 0], 'no row was sent by both');
  assert.ok(stopped.every((s) => s.forwarded > 0), `both relays worked: ${stopped.map((s) => s.forwarded)}`);
  // Progress lines tell rows forwarded and lag.
  const progress = relays.flatMap((r) => r.events.filter((e) => e.event === 'progress'));
  assert.ok(progress.length > 0);
  assert.ok(progress.every((p) => typeof p.forwarded === 'number' && typeof p.waiting === 'number' && typeof p.lag_ms === 'number'));
  await assertExactlyOnceInOrder('ob-two', ROWS);
});

test('clear failures: an unreachable database or Spool is named, a missing outbox says how to create it', async () => {
  const run = (args: string[], env: Record<string, string> = {}) => {
    const relay = startRelay(args, env);
    return relay.exited.then(({ code }) => ({ code, stderr: relay.stderr(), events: relay.events }));
  };
  await app.pool.query("INSERT INTO spool_outbox (queue_name, job) VALUES ('ob-fail', '{\"payload\": 1}')");

  const noDb = spawn(process.execPath, [BIN, 'outbox', 'relay', '--once', '--database-url', 'postgres://app:secret@127.0.0.1:1/app'], { env: { ...process.env, SPOOL_URL: server.url } });
  let noDbErr = '';
  noDb.stderr.on('data', (chunk) => (noDbErr += chunk));
  assert.equal(await new Promise((resolve) => noDb.on('close', resolve)), 1);
  assert.match(noDbErr, /^spool: cannot connect to the application database at postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/app \(connection refused\)$/m);
  assert.doesNotMatch(noDbErr, /secret/);

  const other = await createTestDatabase('outbox_cli_none');
  try {
    const relay = spawn(process.execPath, [BIN, 'outbox', 'relay', '--once', '--database-url', other.url], { env: { ...process.env, SPOOL_URL: server.url } });
    let stderr = '';
    relay.stderr.on('data', (chunk) => (stderr += chunk));
    assert.equal(await new Promise((resolve) => relay.on('close', resolve)), 1);
    assert.match(stderr, /^spool: no outbox in the application database .*relation "spool_outbox_meta" does not exist$/m);
    assert.match(stderr, /^hint: Create it with `spool outbox init --database-url …`/m);
  } finally {
    await other.drop();
  }

  const down = await run(['--once'], { SPOOL_URL: 'http://127.0.0.1:9' });
  assert.equal(down.code, 1);
  assert.match(down.stderr, /"message": "cannot connect to Spool at http:\/\/127\.0\.0\.1:9 \(connection refused\)"/);
  assert.equal(down.events.find((e) => e.event === 'drained')?.waiting, 1);
});
