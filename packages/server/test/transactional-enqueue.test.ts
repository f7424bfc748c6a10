/**
 * spool.enqueue() (migration 039; docs/transactional-enqueue.md) through the
 * SDK's enqueueInTransaction, in transactions of an "application" sharing
 * Spool's database: the job exists exactly when the transaction commits,
 * workers are woken at the commit, the key is checked in SQL as the API
 * checks it, and plan limits and job keys apply.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { generateApiKey } from '@spool/engine';
import { API_KEY_ROLES } from '@spool/protocol';
import { AuthenticationError, AuthorizationError, ConflictError, ValidationError, enqueueInTransaction } from '../../sdk/src/index.js';
import { restrictedKey } from './jobs-helpers.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('txenqueue');
});
after(async () => server?.close());

/** Runs `fn` in an application transaction on Spool's database; commits unless `rollback`. */
async function inTransaction<T>(fn: (client: pg.PoolClient) => Promise<T>, { rollback = false, isolation = '' } = {}): Promise<T> {
  const client = await server.spool.db.connect();
  try {
    await client.query(`BEGIN ${isolation}`);
    const value = await fn(client);
    await client.query(rollback ? 'ROLLBACK' : 'COMMIT');
    return value;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

const jobRow = async (id: string) => (await server.spool.db.query('SELECT * FROM spool.jobs WHERE id = $1', [id])).rows[0];

describe('spool.enqueue()', () => {
  it('creates the job with the transaction: gone after a rollback, there after a commit, and a waiting claim is woken at the commit', async () => {
    await server.spool.db.query('CREATE TABLE IF NOT EXISTS public.orders (id serial PRIMARY KEY, item text)');
    const rolledBack = await inTransaction(async (c) => {
      await c.query("INSERT INTO public.orders (item) VALUES ('lost')");
      return enqueueInTransaction(c, server.apiKey, { queueName: 'tx', payload: { order: 'lost' } });
    }, { rollback: true });
    assert.equal(await jobRow(rolledBack.id), undefined, 'no job without the commit');

    const waiting = server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'tx', worker_id: 'w', wait_ms: 10_000 } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    const made = await inTransaction(async (c) => {
      await c.query("INSERT INTO public.orders (item) VALUES ('kept')");
      const job = await enqueueInTransaction(c, server.apiKey, {
        queueName: 'tx', payload: { order: 'kept' }, priority: 3, maxRetries: 5, tags: { source: 'sql' },
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      });
      assert.equal(await (await server.spool.db.query('SELECT count(*)::int AS n FROM spool.jobs WHERE id = $1', [job.id])).rows[0].n, 0, 'invisible before the commit');
      return job;
    });
    assert.deepEqual([made.created, made.status], [true, 'pending']);
    const claimed = await waiting;
    assert.equal(claimed.status, 200, claimed.text);
    assert.equal(claimed.body.jobs[0]?.id, made.id, 'the long poll was woken by the commit');
    assert.ok(Date.now() - started < 5_000);
    const row = await jobRow(made.id);
    assert.deepEqual([row.organization_id, row.priority, row.max_retries, row.tags, row.traceparent],
      [server.organizationId, 3, 5, { source: 'sql' }, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01']);
    assert.match(made.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a UUIDv7 as the server makes');
    const history = (await server.request('GET', `/api/v1/jobs/${made.id}/history`)).body as { event: string }[];
    assert.deepEqual(history.map((h) => h.event), ['create', 'claim']);
  });

  it('checks the key: unknown or revoked, role, queue scope; the organization is always the key\'s', async () => {
    await assert.rejects(inTransaction((c) => enqueueInTransaction(c, 'sk_test_nope', { queueName: 'tx', payload: {} })), AuthenticationError);
    const scoped = await restrictedKey(server, ['mail-*']);
    const ok = await inTransaction((c) => enqueueInTransaction(c, scoped, { queueName: 'mail-out', payload: {} }));
    assert.equal(ok.created, true);
    await assert.rejects(inTransaction((c) => enqueueInTransaction(c, scoped, { queueName: 'billing', payload: {} })), (err: unknown) =>
      err instanceof AuthorizationError && /may not use queue 'billing'/.test(err.message));
    await server.spool.db.query("UPDATE spool.api_keys SET role = 'worker' WHERE key_prefix = $1", [scoped.slice(0, 12)]);
    await assert.rejects(inTransaction((c) => enqueueInTransaction(c, scoped, { queueName: 'mail-out', payload: {} })), /a worker key may not enqueue/);
    await server.spool.db.query('UPDATE spool.api_keys SET is_active = false WHERE key_prefix = $1', [scoped.slice(0, 12)]);
    await assert.rejects(inTransaction((c) => enqueueInTransaction(c, scoped, { queueName: 'mail-out', payload: {} })), AuthenticationError);

    const other = await server.createOrganization();
    const theirs = await inTransaction((c) => enqueueInTransaction(c, other.apiKey, { queueName: 'tx', payload: {} }));
    assert.equal((await jobRow(theirs.id)).organization_id, other.organizationId);
  });

  it('decides as POST /jobs does for every role, queue pattern and expiry of a key', async () => {
    const key = async (role: string, queues: string[], expired = false) => {
      const { key: secret, hash, prefix } = generateApiKey('development');
      await server.spool.db.query(
        "INSERT INTO spool.api_keys (organization_id, name, key_hash, key_prefix, queues, role, expires_at) VALUES ($1, 'parity', $2, $3, $4, $5, CASE WHEN $6 THEN now() - interval '1 minute' END)",
        [server.organizationId, hash, prefix, queues, role, expired]);
      return secret;
    };
    const cases: { role: string; queues: string[]; expired?: boolean }[] = [
      ...API_KEY_ROLES.flatMap((role) => [{ role, queues: [] }, { role, queues: ['txp-a*'] }, { role, queues: ['txp-b'] }]),
      { role: 'admin', queues: [], expired: true },
    ];
    for (const { role, queues, expired } of cases) {
      const secret = await key(role, queues, expired);
      for (const queueName of ['txp-a1', 'txp-b']) {
        const api = await server.request('POST', '/api/v1/jobs', { body: { queue_name: queueName, payload: {} }, auth: secret });
        const sql = await inTransaction((c) => enqueueInTransaction(c, secret, { queueName, payload: {} })).then(() => 201, (err: { status?: number }) => err.status ?? 0);
        assert.equal(sql, api.status, `${role} key of ${JSON.stringify(queues)}${expired ? ' (expired)' : ''} on ${queueName}: ${api.text}`);
      }
    }
  });

  it('refuses bad input with the field named, and creates nothing', async () => {
    const refused = async (job: Record<string, unknown>, pattern: RegExp) =>
      assert.rejects(inTransaction((c) => enqueueInTransaction(c, server.apiKey, { queueName: 'bad', payload: {}, ...job } as never)), (err: unknown) =>
        err instanceof ValidationError && pattern.test(err.message));
    await refused({ priority: 1000 }, /priority must be an integer in -100\.\.100/);
    await refused({ maxRetries: 1.5 }, /max_retries must be an integer/);
    await refused({ queueName: '-bad' }, /queue_name '-bad' is not valid/);
    await refused({ scheduledAt: 'tomorrow' }, /scheduled_at must be an ISO 8601 timestamp/);
    await refused({ expiresAt: '2001-01-01T00:00:00Z' }, /expires_at must be later/);
    await refused({ tags: 'x' }, /tags must be an object/);
    await refused({ traceparent: 'nope' }, /traceparent must be a W3C traceparent/);
    await refused({ jobKey: { key: 'k', mode: 'debounce' } }, /job_key\.window_secs is required/);
    await refused({ jobKey: { key: 'k', mode: 'sometimes' } }, /job_key must be/);
    await refused({ completionWebhook: 'https://example.com/hook' }, /completionWebhook is not accepted/);
    await assert.rejects(inTransaction((c) => c.query("SELECT spool.enqueue($1, 'bad', '{}', '{\"colour\": 1}')", [server.apiKey])), /unknown option\(s\) colour/);
    assert.equal((await server.spool.db.query("SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = 'bad'")).rows[0].n, 0);
  });

  it('applies plan limits: the free plan\'s active jobs and payload size', async () => {
    const free = await server.createOrganization('free');
    for (let i = 0; i < 10; i++) await inTransaction((c) => enqueueInTransaction(c, free.apiKey, { queueName: 'tx', payload: { i } }));
    await assert.rejects(inTransaction((c) => enqueueInTransaction(c, free.apiKey, { queueName: 'tx', payload: {} })), (err: unknown) =>
      err instanceof AuthorizationError && err.code === 'LIMIT_EXCEEDED' && /active job limit reached: 10/.test(err.message));
    const big = await server.createOrganization('free');
    await assert.rejects(inTransaction((c) => enqueueInTransaction(c, big.apiKey, { queueName: 'tx', payload: { blob: 'x'.repeat(70_000) } })), /plan allows at most 65536/);
    const today = (await server.spool.db.query('SELECT jobs_today FROM spool.organizations WHERE id = $1', [free.organizationId])).rows[0].jobs_today;
    assert.equal(today, 10, 'the daily quota counts created jobs');
  });

  it('applies job keys in SQL: 20 concurrent transactions of one dedupe key leave one job; REPEATABLE READ is refused', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, n) =>
      inTransaction((c) => enqueueInTransaction(c, server.apiKey, { queueName: 'tx-key', payload: { n }, jobKey: { key: 'one', mode: 'dedupe' } }))));
    assert.equal(new Set(answers.map((a) => a.id)).size, 1);
    assert.deepEqual(answers.map((a) => a.keyOutcome).sort(), ['created', ...Array(19).fill('deduplicated')].sort());
    const debounced = await inTransaction((c) => enqueueInTransaction(c, server.apiKey, { queueName: 'tx-key', payload: { v: 1 }, jobKey: { key: 'd', mode: 'debounce', windowSecs: 30 } }));
    const again = await inTransaction((c) => enqueueInTransaction(c, server.apiKey, { queueName: 'tx-key', payload: { v: 2 }, jobKey: { key: 'd', mode: 'debounce', windowSecs: 30 } }));
    assert.deepEqual([again.id, again.keyOutcome], [debounced.id, 'debounced']);
    assert.deepEqual((await jobRow(debounced.id)).payload, { v: 2 });
    await assert.rejects(inTransaction((c) => enqueueInTransaction(c, server.apiKey, { queueName: 'tx-key', payload: {}, jobKey: { key: 'one', mode: 'dedupe' } }), { isolation: 'ISOLATION LEVEL REPEATABLE READ' }), ConflictError);
  });
});
