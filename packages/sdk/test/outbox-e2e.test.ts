/**
 * The transactional outbox against real PostgreSQL: an "application" database
 * of its own (where spool_outbox lives) and a real Spool server over another.
 * The relay runs in-process here; packages/cli/test/outbox-relay.test.ts
 * kills real relay processes.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, beforeEach, test } from 'node:test';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import {
  enqueueToOutbox,
  ensureOutboxTable,
  OUTBOX_SCHEMA_SQL,
  OutboxRelay,
  outboxRow,
  SpoolClient,
  SpoolNetworkError,
  type OutboxRelayEvent,
} from '../src/index.js';

let server: TestServer;
let app: TestDatabase;
let spool: SpoolClient;
let outboxId: string;

before(async () => {
  [server, app] = await Promise.all([startTestServer('outbox'), createTestDatabase('outbox_app')]);
  spool = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey, retry: { maxRetries: 1, baseDelayMs: 10 } });
  assert.deepEqual(await ensureOutboxTable(app.pool), { created: true });
  assert.deepEqual(await ensureOutboxTable(app.pool), { created: false });
  await app.pool.query('CREATE TABLE orders (id int PRIMARY KEY, total int NOT NULL)');
  outboxId = (await app.pool.query<{ outbox_id: string }>('SELECT outbox_id::text FROM spool_outbox_meta')).rows[0]!.outbox_id;
});

after(async () => {
  await app.drop();
  await server.close();
});

beforeEach(async () => {
  await app.pool.query('TRUNCATE spool_outbox');
});

interface SpoolJob {
  id: string;
  idempotency_key: string | null;
  payload: any;
  created_at: Date;
}

async function jobsOn(queue: string): Promise<SpoolJob[]> {
  const result = await server.database.pool.query<SpoolJob>(
    'SELECT id::text, idempotency_key, payload, created_at FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 ORDER BY created_at, id',
    [server.organizationId, queue],
  );
  return result.rows;
}

interface OutboxRowState {
  id: string;
  ordering_key: string | null;
  forwarded_at: Date | null;
  spool_job_id: string | null;
  attempts: number;
  last_error: string | null;
  next_attempt_at: Date | null;
}

async function outboxRows(): Promise<OutboxRowState[]> {
  const result = await app.pool.query<OutboxRowState>('SELECT id::text, ordering_key, forwarded_at, spool_job_id, attempts, last_error, next_attempt_at FROM spool_outbox ORDER BY id');
  return result.rows;
}

async function inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>, commit = true): Promise<T> {
  const client = await app.pool.connect();
  try {
    await client.query('BEGIN');
    const value = await work(client);
    await client.query(commit ? 'COMMIT' : 'ROLLBACK');
    return value;
  } finally {
    client.release();
  }
}

function relay(options: Partial<ConstructorParameters<typeof OutboxRelay>[0]> = {}): OutboxRelay {
  return new OutboxRelay({ pool: app.pool, spool, ...options });
}

test('a job written in a rolled-back transaction is never forwarded; a committed one is forwarded once, also after a lost mark', async () => {
  await inTransaction(async (db) => {
    await db.query('INSERT INTO orders (id, total) VALUES (1, 10)');
    await enqueueToOutbox(db, { queueName: 'ob-commit', payload: { order: 1 } });
  }, false);
  const { id } = await inTransaction(async (db) => {
    await db.query('INSERT INTO orders (id, total) VALUES (2, 20)');
    return enqueueToOutbox(db, { queueName: 'ob-commit', payload: { order: 2 } });
  });
  assert.match(id, /^\d+$/);

  const first = await relay().drain();
  assert.equal(first.forwarded, 1);
  assert.equal(first.created, 1);
  assert.equal(first.status.waiting, 0);
  let jobs = await jobsOn('ob-commit');
  assert.deepEqual(jobs.map((j) => j.payload), [{ order: 2 }]);
  assert.equal(jobs[0]!.idempotency_key, `outbox:${outboxId}:${id}`);
  const [row] = await outboxRows();
  assert.equal(row!.spool_job_id, jobs[0]!.id);
  assert.ok(row!.forwarded_at);
  assert.equal(row!.attempts, 1);

  // Nothing more to do.
  assert.equal((await relay().drain()).forwarded, 0);
  // As if a relay had died after Spool answered and before its mark committed: the row goes again, and Spool answers with the job it has.
  await app.pool.query('UPDATE spool_outbox SET forwarded_at = NULL, spool_job_id = NULL');
  const again = await relay().drain();
  assert.deepEqual({ forwarded: again.forwarded, created: again.created, existing: again.existing }, { forwarded: 1, created: 0, existing: 1 });
  jobs = await jobsOn('ob-commit');
  assert.equal(jobs.length, 1);
  assert.equal((await outboxRows())[0]!.spool_job_id, jobs[0]!.id);
});

test('a row whose job key was answered with a standing job takes effect once when sent again after a lost mark, also after that job has ended', async () => {
  const jobKey = { key: 'report:7', mode: 'dedupe' } as const;
  const standing = await spool.jobs.create({ queueName: 'ob-keyed', payload: { first: true }, jobKey });
  await inTransaction((db) => enqueueToOutbox(db, { queueName: 'ob-keyed', payload: { second: true }, jobKey }));
  const first = await relay().drain();
  assert.deepEqual({ forwarded: first.forwarded, created: first.created, existing: first.existing }, { forwarded: 1, created: 0, existing: 1 });
  assert.equal((await outboxRows())[0]!.spool_job_id, standing.id);

  // The standing job runs and ends; then the row goes again, as after a relay killed before its mark committed.
  const claimed = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'ob-keyed', worker_id: 'w' } });
  const [job] = claimed.body.jobs;
  assert.equal(job.id, standing.id);
  assert.equal((await server.request('POST', `/api/v1/jobs/${job.id}/complete`, { body: { worker_id: 'w', lease_id: job.lease_id } })).status, 200);
  await app.pool.query('UPDATE spool_outbox SET forwarded_at = NULL, spool_job_id = NULL');
  const again = await relay().drain();
  assert.deepEqual({ forwarded: again.forwarded, created: again.created, existing: again.existing }, { forwarded: 1, created: 0, existing: 1 });
  assert.deepEqual((await jobsOn('ob-keyed')).map((j) => j.id), [standing.id], 'the row was answered with the same job, and made none');
  assert.equal((await outboxRows())[0]!.spool_job_id, standing.id);
});

test('every create field reaches Spool (bulk and single requests); the job\'s own idempotency key is kept', async () => {
  const scheduledAt = new Date(Date.now() + 3_600_000);
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const parent = await spool.jobs.create({ queueName: 'ob-fields', payload: { parent: true } });
  const ids = await inTransaction(async (db) => [
    // Bulk-able: only bulk item fields.
    await enqueueToOutbox(db, { queueName: 'ob-fields', payload: { n: 1 }, priority: 7, maxRetries: 9, timeoutSeconds: 60, tags: { camelCase: 'kept' }, scheduledAt, idempotencyKey: 'mine-1', traceparent }),
    // The same key again: the same job.
    await enqueueToOutbox(db, { queueName: 'ob-fields', payload: { n: 2 }, idempotencyKey: 'mine-1' }),
    // parentJobId is not a bulk item field: POST /jobs.
    await enqueueToOutbox(db, { queueName: 'ob-fields', payload: { n: 3 }, parentJobId: parent.id }),
    // jobKey travels as given and orders the row by its key.
    await enqueueToOutbox(db, { queueName: 'ob-fields', payload: { n: 4 }, jobKey: { key: 'user:4', mode: 'replace' } }),
  ]);
  const drained = await relay().drain();
  assert.deepEqual({ forwarded: drained.forwarded, created: drained.created, existing: drained.existing, failed: drained.failed }, { forwarded: 4, created: 3, existing: 1, failed: 0 });

  const rows = await outboxRows();
  assert.equal(rows[0]!.spool_job_id, rows[1]!.spool_job_id);
  assert.equal(rows[3]!.ordering_key, 'user:4');
  const first = await spool.jobs.get(rows[0]!.spool_job_id!);
  assert.equal(first.idempotencyKey, 'mine-1');
  assert.deepEqual(first.payload, { n: 1 });
  assert.deepEqual({ priority: first.priority, maxRetries: first.maxRetries, timeoutSeconds: first.timeoutSeconds, status: first.status }, { priority: 7, maxRetries: 9, timeoutSeconds: 60, status: 'scheduled' });
  assert.deepEqual(first.tags, { camelCase: 'kept' });
  assert.equal(first.scheduledAt && Date.parse(first.scheduledAt), scheduledAt.getTime());
  assert.equal(first.traceparent, traceparent);
  const third = await spool.jobs.get(rows[2]!.spool_job_id!);
  assert.equal(third.parentJobId, parent.id);
  assert.equal(third.idempotencyKey, `outbox:${outboxId}:${ids[2]!.id}`);
  const fourth = await spool.jobs.get(rows[3]!.spool_job_id!);
  assert.deepEqual(fourth.payload, { n: 4 });
  const stored = await app.pool.query<{ job: unknown }>('SELECT job FROM spool_outbox WHERE id = $1', [ids[3]!.id]);
  assert.deepEqual(stored.rows[0]!.job, { payload: { n: 4 }, job_key: { key: 'user:4', mode: 'replace' } });
});

test('a key\'s rows reach Spool in id order; a refused row holds back the later rows of its key, not other keys', async () => {
  const insertRaw = (db: pg.PoolClient, queue: string, job: object, key: string | null) =>
    db.query<{ id: string }>('INSERT INTO spool_outbox (queue_name, job, ordering_key) VALUES ($1, $2, $3) RETURNING id::text', [queue, JSON.stringify(job), key]).then((r) => r.rows[0]!.id);
  const ids = await inTransaction(async (db) => ({
    // Refused by Spool: priority out of range (written around the SDK's check, as another language might).
    a1: await insertRaw(db, 'ob-order', { payload: { k: 'a', n: 1 }, priority: 1000 }, 'a'),
    b1: (await enqueueToOutbox(db, { queueName: 'ob-order', payload: { k: 'b', n: 1 }, orderingKey: 'b' })).id,
    a2: (await enqueueToOutbox(db, { queueName: 'ob-order', payload: { k: 'a', n: 2 }, orderingKey: 'a' })).id,
    u1: await insertRaw(db, 'ob-order', { payload: { k: null, n: 1 }, priority: 1000 }, null),
    b2: (await enqueueToOutbox(db, { queueName: 'ob-order', payload: { k: 'b', n: 2 }, orderingKey: 'b' })).id,
    // A third key.
    c1: (await enqueueToOutbox(db, { queueName: 'ob-order', payload: { k: 'c', n: 1 }, orderingKey: 'c' })).id,
    a3: (await enqueueToOutbox(db, { queueName: 'ob-order', payload: { k: 'a', n: 3 }, orderingKey: 'a' })).id,
    u2: (await enqueueToOutbox(db, { queueName: 'ob-order', payload: { k: null, n: 2 } })).id,
    c2: (await enqueueToOutbox(db, { queueName: 'ob-order', payload: { k: 'c', n: 2 }, orderingKey: 'c' })).id,
  }));
  const events: OutboxRelayEvent[] = [];
  const first = await relay({ onEvent: (e) => events.push(e) }).drain();
  assert.equal(first.unavailable, undefined);
  assert.deepEqual({ forwarded: first.forwarded, failed: first.failed }, { forwarded: 5, failed: 2 });
  const failedIds = new Set(events.flatMap((e) => (e.type === 'row_failed' ? [e.id] : [])));
  assert.deepEqual(failedIds, new Set([ids.a1, ids.u1]));

  let state = new Map((await outboxRows()).map((r) => [r.id, r]));
  for (const forwarded of [ids.b1, ids.b2, ids.u2, ids.c1, ids.c2]) assert.ok(state.get(forwarded)!.forwarded_at, `row ${forwarded} forwarded`);
  for (const waiting of [ids.a1, ids.a2, ids.a3, ids.u1]) assert.equal(state.get(waiting)!.forwarded_at, null, `row ${waiting} waits`);
  const refused = state.get(ids.a1)!;
  assert.match(refused.last_error!, /priority/);
  assert.equal(refused.attempts, 1);
  assert.ok(refused.next_attempt_at! > new Date(), 'a refused row backs off');
  // The rows behind it were never sent.
  assert.equal(state.get(ids.a2)!.attempts, 0);

  const status = await relay().status();
  assert.deepEqual({ waiting: status.waiting, failing: status.failing }, { waiting: 4, failing: 2 });
  const failing = await relay().failing();
  assert.deepEqual(failing.map((f) => f.id), [ids.a1, ids.u1].sort((x, y) => Number(BigInt(x) - BigInt(y))));

  // Fixed (as an operator would), the key flows again, in order.
  await app.pool.query("UPDATE spool_outbox SET job = job - 'priority', next_attempt_at = NULL WHERE id = ANY($1::bigint[])", [[ids.a1, ids.u1]]);
  const second = await relay().drain();
  assert.deepEqual({ forwarded: second.forwarded, failed: second.failed, waiting: second.status.waiting }, { forwarded: 4, failed: 0, waiting: 0 });
  state = new Map((await outboxRows()).map((r) => [r.id, r]));
  const jobs = await jobsOn('ob-order');
  assert.equal(jobs.length, 9);
  for (const key of ['a', 'b', 'c']) {
    const order = jobs.filter((j) => j.payload.k === key).map((j) => j.payload.n);
    assert.deepEqual(order, [...order].sort((x, y) => x - y), `key ${key} created in outbox order`);
    const created = jobs.filter((j) => j.payload.k === key).map((j) => j.created_at.getTime());
    assert.equal(new Set(created).size, created.length, `key ${key}: one request per row`);
  }
});

test('writers of one key take turns until commit, so a key\'s ids follow commit order; other keys and relays do not wait', async () => {
  const first = await app.pool.connect();
  const second = await app.pool.connect();
  const other = await app.pool.connect();
  try {
    await first.query('BEGIN');
    await second.query('BEGIN');
    await other.query('BEGIN');
    // The second writer reserves an id first (nextval), but has not written its row yet.
    const early = (await second.query<{ id: string }>("SELECT nextval(pg_get_serial_sequence('spool_outbox', 'id'))::text AS id")).rows[0]!.id;
    const a = await enqueueToOutbox(first, { queueName: 'ob-turns', payload: { n: 1 }, orderingKey: 'k' });
    let secondDone = false;
    const b = enqueueToOutbox(second, { queueName: 'ob-turns', payload: { n: 2 }, orderingKey: 'k' }).then((r) => ((secondDone = true), r));
    // A relay holding key k (it locks another class) and a writer of another key are not held up.
    await other.query("SELECT pg_advisory_xact_lock(hashtext('spool_outbox relays'), hashtext('k'))");
    await enqueueToOutbox(other, { queueName: 'ob-turns', payload: { n: 3 }, orderingKey: 'other' });
    await enqueueToOutbox(other, { queueName: 'ob-turns', payload: { n: 4 } });
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(secondDone, false, 'the second writer of key k waits for the first to commit');
    await first.query('COMMIT');
    const bId = (await b).id;
    await second.query('COMMIT');
    await other.query('COMMIT');
    assert.ok(BigInt(bId) > BigInt(a.id), `${bId} > ${a.id}`);
    assert.ok(BigInt(bId) > BigInt(early));
  } finally {
    // Closed, not pooled: after a failure they may still be in a transaction.
    first.release(true);
    second.release(true);
    other.release(true);
  }
  const drained = await relay().drain();
  assert.equal(drained.forwarded, 4);
  const order = (await jobsOn('ob-turns')).filter((j) => j.payload.n <= 2).map((j) => j.payload.n);
  assert.deepEqual(order, [1, 2]);
});

test('forwarded rows are deleted after keepForwardedMs; waiting rows never', async () => {
  await inTransaction(async (db) => {
    for (let n = 0; n < 5; n++) await enqueueToOutbox(db, { queueName: 'ob-prune', payload: { n } });
    await db.query("INSERT INTO spool_outbox (queue_name, job) VALUES ('ob-prune', '{\"payload\": 1, \"max_retries\": -1}')");
  });
  const drained = await relay({ keepForwardedMs: 3_600_000 }).drain();
  assert.deepEqual({ forwarded: drained.forwarded, failed: drained.failed, pruned: drained.pruned }, { forwarded: 5, failed: 1, pruned: 0 });
  assert.equal((await outboxRows()).length, 6);
  const events: OutboxRelayEvent[] = [];
  assert.equal(await relay({ keepForwardedMs: 0, onEvent: (e) => events.push(e) }).prune(), 5);
  assert.deepEqual(events, [{ type: 'pruned', deleted: 5 }]);
  const left = await outboxRows();
  assert.equal(left.length, 1);
  assert.equal(left[0]!.forwarded_at, null);
  assert.equal(await relay({ keepForwardedMs: null }).prune(), 0);
});

test('while Spool is unreachable rows wait (the error recorded, no backoff of their own), and go once it is back', async () => {
  await inTransaction(async (db) => {
    await enqueueToOutbox(db, { queueName: 'ob-down', payload: { n: 1 }, orderingKey: 'x' });
    await enqueueToOutbox(db, { queueName: 'ob-down', payload: { n: 2 } });
  });
  const down = new SpoolClient({ baseUrl: 'http://127.0.0.1:9', apiKey: server.apiKey, retry: false });
  const failed = await relay({ spool: down }).drain();
  assert.ok(failed.unavailable instanceof SpoolNetworkError, String(failed.unavailable));
  assert.deepEqual({ forwarded: failed.forwarded, failed: failed.failed, waiting: failed.status.waiting }, { forwarded: 0, failed: 0, waiting: 2 });
  for (const row of await outboxRows()) {
    assert.match(row.last_error!, /^Spool unavailable: /);
    assert.equal(row.next_attempt_at, null);
  }

  // The background loop backs off and says so, then forwards once Spool answers.
  const events: OutboxRelayEvent[] = [];
  const looping = relay({ spool: down, pollMs: 10, onEvent: (e) => events.push(e) });
  looping.start();
  looping.start();
  while (!events.some((e) => e.type === 'unavailable')) await new Promise((resolve) => setTimeout(resolve, 10));
  await looping.stop();
  await looping.stop();
  const outage = events.find((e) => e.type === 'unavailable')!;
  assert.equal(outage.type === 'unavailable' && outage.source, 'spool');

  const back = relay({ pollMs: 10 });
  back.start();
  for (let waited = 0; (await outboxRows()).some((r) => !r.forwarded_at); waited += 20) {
    assert.ok(waited < 5000, 'forwarded within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await back.stop();
  assert.deepEqual((await jobsOn('ob-down')).map((j) => j.payload.n).sort(), [1, 2]);
  assert.ok((await outboxRows()).every((r) => r.last_error === null));
});

test('what Spool would refuse later is refused in the application\'s transaction', async () => {
  assert.throws(() => outboxRow({ queueName: 'bad name', payload: 1 }), /queueName must be/);
  assert.throws(() => outboxRow({ queueName: 'q', payload: undefined }), /payload is required/);
  assert.throws(() => outboxRow({ queueName: 'q', payload: 1, priority: 101 }), /priority must be an integer from -100 to 100/);
  assert.throws(() => outboxRow({ queueName: 'q', payload: 1, idempotencyKey: 'x'.repeat(256) }), /idempotencyKey must be 1-255/);
  assert.throws(() => outboxRow({ queueName: 'q', payload: { big: 1n } }), /cannot be written as JSON/);
  assert.deepEqual(outboxRow({ queueName: 'q', payload: { a: 1 }, scheduledAt: new Date(0), expiresAt: undefined }), {
    queueName: 'q',
    job: { payload: { a: 1 }, scheduled_at: '1970-01-01T00:00:00.000Z' },
    orderingKey: null,
  });
  // The table refuses a job without a payload, whoever writes it.
  await assert.rejects(app.pool.query("INSERT INTO spool_outbox (queue_name, job) VALUES ('q', '{}')"), /spool_outbox_job_check/);
  // The DDL runs again without harm (as at every start of the application).
  await app.pool.query(OUTBOX_SCHEMA_SQL);
  assert.equal((await app.pool.query('SELECT count(*)::int AS n FROM spool_outbox_meta')).rows[0].n, 1);
  assert.equal((await app.pool.query('SELECT outbox_id::text FROM spool_outbox_meta')).rows[0].outbox_id, outboxId);
});

test('docs/transactional-enqueue.md shows the DDL as it is', async () => {
  const doc = await readFile(new URL('../../../docs/transactional-enqueue.md', import.meta.url), 'utf8');
  const block = /is OUTBOX_SCHEMA_SQL \(packages\/sdk\/src\/outbox\/schema\.ts\)[^\n]*\n```sql\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.equal(block, OUTBOX_SCHEMA_SQL);
});
