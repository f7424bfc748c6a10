import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NewJob } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { EnqueueBatcher } from '../src/enqueue-batcher.js';

describe('EnqueueBatcher (group commit)', () => {
  let database: TestDatabase;
  let org: string;
  before(async () => {
    database = await createTestDatabase('batcher');
    org = await createOrganization(database.pool);
  });
  after(async () => database.drop());

  const job = (extra: Partial<NewJob> = {}): NewJob => ({ organizationId: org, queueName: 'gc', payload: { n: 1 }, ...extra });

  it('turns concurrent single enqueues into one INSERT, each caller getting its own id', async () => {
    const batcher = new EnqueueBatcher(database.pool);
    const results = await Promise.all(Array.from({ length: 50 }, (_, n) => batcher.enqueue(job({ payload: { n } }))));
    assert.equal(batcher.counters.flushes, 1);
    assert.equal(new Set(results.map((r) => r.id)).size, 50);
    assert.ok(results.every((r) => r.created && r.status === 'pending'));
    const rows = await database.pool.query<{ id: string; payload: { n: number } }>('SELECT id, payload FROM spool.jobs WHERE id = ANY($1::uuid[])', [results.map((r) => r.id)]);
    const byId = new Map(rows.rows.map((r) => [r.id, r.payload.n]));
    results.forEach((r, n) => assert.equal(byId.get(r.id), n, 'each caller got the id of its own job'));
  });

  it('two callers with one idempotency key in one batch: the first creates, the second gets the same id', async () => {
    const batcher = new EnqueueBatcher(database.pool);
    const [a, b] = await Promise.all([batcher.enqueue(job({ idempotencyKey: 'same' })), batcher.enqueue(job({ idempotencyKey: 'same' }))]);
    assert.equal(batcher.counters.flushes, 1);
    assert.deepEqual([a!.created, b!.created], [true, false]);
    assert.equal(a!.id, b!.id);
    const again = await batcher.enqueue(job({ idempotencyKey: 'same' }));
    assert.deepEqual([again.id, again.created], [a!.id, false]);
  });

  it('a bad row fails only its own caller', async () => {
    const batcher = new EnqueueBatcher(database.pool);
    const settled = await Promise.allSettled([
      batcher.enqueue(job({ payload: { ok: 1 } })),
      batcher.enqueue(job({ payload: { bad: 'nul \u0000 byte' } })),
      batcher.enqueue(job({ payload: { ok: 2 } })),
    ]);
    assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.equal(batcher.counters.fallbacks, 1);
  });

  it('keeps batching while flushes run, up to maxBatch per INSERT', async () => {
    const batcher = new EnqueueBatcher(database.pool, { maxBatch: 10, maxConcurrentFlushes: 1 });
    const results = await Promise.all(Array.from({ length: 35 }, () => batcher.enqueue(job())));
    assert.equal(new Set(results.map((r) => r.id)).size, 35);
    assert.equal(batcher.counters.flushes, 4);
    await batcher.drain();
  });
});

describe('POST /api/v1/jobs under concurrency', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('groupcommit');
  });
  after(async () => server.close());

  it('50 concurrent creates all get 201 with distinct ids and rows', async () => {
    const responses = await Promise.all(Array.from({ length: 50 }, (_, n) => server.request('POST', '/api/v1/jobs', { body: { queue_name: 'gc-http', payload: { n } } })));
    assert.ok(responses.every((r) => r.status === 201 && r.body.created === true), responses.map((r) => r.status).join(','));
    const ids = responses.map((r) => r.body.id);
    assert.equal(new Set(ids).size, 50);
    const rows = await server.spool.db.query<{ id: string; payload: { n: number } }>('SELECT id, payload FROM spool.jobs WHERE queue_name = $1', ['gc-http']);
    assert.equal(rows.rowCount, 50);
    const byId = new Map(rows.rows.map((r) => [r.id, r.payload.n]));
    responses.forEach((r, n) => assert.equal(byId.get(r.body.id), n));
  });

  it('concurrent creates with one idempotency key: exactly one 201, the rest 200 with the same id', async () => {
    const responses = await Promise.all(Array.from({ length: 10 }, () => server.request('POST', '/api/v1/jobs', { body: { queue_name: 'gc-idem', payload: {}, idempotency_key: 'k' } })));
    assert.equal(responses.filter((r) => r.status === 201).length, 1);
    assert.equal(new Set(responses.map((r) => r.body.id)).size, 1);
  });
});
