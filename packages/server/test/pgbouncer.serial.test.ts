/**
 * Spool behind a real PgBouncer in transaction pooling mode (docs/pgbouncer.md):
 * DATABASE_URL → PgBouncer, DATABASE_DIRECT_URL → PostgreSQL for LISTEN, and
 * DATABASE_PREPARED_STATEMENTS=false because PgBouncer before 1.21 does not
 * track prepared statements. The database starts empty, so the migrations
 * run through PgBouncer too. Fails (does not skip) when pgbouncer is missing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { listMigrations } from '@spool/engine';
import { SpoolClient, Worker } from '@spool/sdk';
import { loadConfig, startSpool, type Config, type RunningSpool } from '@spool/server';
import { pino } from 'pino';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { pgbouncerVersion, startPgBouncer, type PgBouncer } from '../../../test-support/pgbouncer.js';
import { startTestServerOn, type TestServer } from '../../../test-support/server.js';
import { openSse } from '../../../test-support/sse.js';
import { enqueue } from './jobs-helpers.js';

let bouncer: PgBouncer;
let database: TestDatabase;
let server: TestServer;
let pooledUrl: string;
let config: Partial<Config>;

/** Rows of an admin-console command (simple protocol only). */
async function adminConsole(command: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: bouncer.adminUrl });
  await client.connect();
  try {
    return (await client.query(command)).rows;
  } finally {
    await client.end();
  }
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | null | undefined | false>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

before(async () => {
  pgbouncerVersion(); // throws "apt-get install pgbouncer" when missing
  database = await createTestDatabase('pgbouncer', { empty: true });
  bouncer = await startPgBouncer(database.url, { poolSize: 5 });
  pooledUrl = bouncer.urlFor(database.url);
  config = {
    databaseUrl: pooledUrl,
    databaseDirectUrl: database.url,
    preparedStatements: false,
    poolMax: 10,
    leaderTtlMs: 5_000,
  };
  server = await startTestServerOn(database, 'pgbouncer', config);
});

after(async () => {
  await server?.close();
  await bouncer?.stop();
});

describe(`Spool behind PgBouncer (transaction pooling)`, () => {
  it(`runs on PgBouncer ${pgbouncerVersionOrNone()} and applied every migration through it`, async () => {
    const applied = await database.pool.query<{ version: number }>('SELECT version FROM spool.schema_migrations ORDER BY version');
    assert.deepEqual(applied.rows.map((r) => r.version), listMigrations().map((m) => m.version));
    const pools = await adminConsole('SHOW POOLS');
    const ours = pools.find((p) => p.database === database.name);
    assert.ok(ours, `PgBouncer has a pool for ${database.name}: ${JSON.stringify(pools.map((p) => p.database))}`);
    assert.equal(ours.pool_mode, 'transaction');
    const stats = await adminConsole('SHOW STATS');
    const transactions = Number(stats.find((s) => s.database === database.name)?.total_xact_count ?? 0);
    assert.ok(transactions > 0, `transactions through PgBouncer: ${transactions}`);
  });

  it('keeps LISTEN on the direct connection and everything else on PgBouncer', async () => {
    const clients = await adminConsole('SHOW CLIENTS');
    const ours = clients.filter((c) => c.database === database.name);
    assert.ok(ours.length > 0, 'Spool has clients on PgBouncer');
    assert.ok(!ours.some((c) => c.application_name === 'spool-notifier'), 'the notifier is not behind PgBouncer');
    const direct = await database.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'spool-notifier'", [database.name]);
    assert.equal(direct.rows[0]!.n, 1, 'one LISTEN connection straight to PostgreSQL');
  });

  it('refuses to start with LISTEN behind PgBouncer (no DATABASE_DIRECT_URL), naming the setting', async () => {
    await assert.rejects(
      startSpool({ ...loadConfig({}), ...config, databaseDirectUrl: null, host: '127.0.0.1', port: 0, grpcPort: 0, logLevel: 'silent' }, { logger: pino({ level: 'silent' }), announce: () => {} }),
      /did not reach the LISTEN connection \(DATABASE_URL\).*set DATABASE_DIRECT_URL/,
    );
  });

  it('shows why named prepared statements are off: they break across server connections', async () => {
    // A client prepares on server connection X; while another client holds X
    // in a transaction, the first one's next transaction lands on another.
    // The Spool server under test shares PgBouncer's pool, so which server
    // connection a transaction gets is not fixed: the statement names its
    // backend, and the second client begins until it holds that one.
    const a = new pg.Client({ connectionString: pooledUrl });
    const b = new pg.Client({ connectionString: pooledUrl });
    await a.connect();
    await b.connect();
    const probe = { name: 'spool_pgbouncer_probe', text: 'SELECT pg_backend_pid() AS pid' };
    try {
      const { rows: [prepared] } = await a.query<{ pid: number }>(probe);
      let held = false;
      for (let attempt = 0; attempt < 200 && !held; attempt++) {
        await b.query('BEGIN');
        held = (await b.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid === prepared!.pid;
        if (!held) {
          await b.query('COMMIT');
          await sleep(5);
        }
      }
      assert.ok(held, `the second client never got server connection ${prepared!.pid}`);
      await assert.rejects(a.query(probe), /prepared statement "spool_pgbouncer_probe" does not exist/);
      await b.query('COMMIT');
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('enqueues, claims, completes, and fails with a retry then to the dead-letter queue', async () => {
    const done = await enqueue(server, { queue_name: 'pgb-basic', payload: { n: 1 } });
    const failing = await enqueue(server, { queue_name: 'pgb-basic', payload: { n: 2 }, max_retries: 1, priority: -1 });
    const [first] = (await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'pgb-basic', worker_id: 'w1', limit: 1 } })).body.jobs;
    assert.equal(first.id, done);
    const completed = await server.request('POST', `/api/v1/jobs/${done}/complete`, { body: { worker_id: 'w1', lease_id: first.lease_id, result: { ok: true } } });
    assert.equal(completed.status, 200, completed.text);

    const [second] = (await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'pgb-basic', worker_id: 'w1' } })).body.jobs;
    assert.equal(second.id, failing);
    const retried = await server.request('POST', `/api/v1/jobs/${failing}/fail`, { body: { worker_id: 'w1', lease_id: second.lease_id, error: 'boom' } });
    assert.equal(retried.status, 200, retried.text);
    assert.equal(retried.body.will_retry, true);
    // The retry is due after the 1 s backoff; the long poll is woken by the promoter's NOTIFY.
    const again = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'pgb-basic', worker_id: 'w1', wait_ms: 15_000 } });
    assert.equal(again.body.jobs[0]?.id, failing, again.text);
    const dead = await server.request('POST', `/api/v1/jobs/${failing}/fail`, { body: { worker_id: 'w1', lease_id: again.body.jobs[0].lease_id, error: 'boom again' } });
    assert.equal(dead.body.will_retry, false, dead.text);
    assert.equal((await server.request('GET', `/api/v1/jobs/${done}`)).body.status, 'completed');
    assert.equal((await server.request('GET', `/api/v1/jobs/${failing}`)).body.status, 'deadletter');
  });

  it('wakes a long-polling claim by NOTIFY, long before wait_ms', async () => {
    const started = Date.now();
    const poll = server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'pgb-wake', worker_id: 'w1', wait_ms: 20_000 } });
    await sleep(300);
    const posted = Date.now();
    const id = await enqueue(server, { queue_name: 'pgb-wake' });
    const res = await poll;
    assert.equal(res.body.jobs[0]?.id, id, res.text);
    assert.ok(Date.now() - posted < 5_000, `answered ${Date.now() - posted} ms after the enqueue (poll started ${posted - started} ms before)`);
  });

  it('runs SDK workers through it: bulk enqueue, batched completes and fails with retries', async () => {
    const client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
    const jobs = Array.from({ length: 40 }, (_, i) => ({ payload: { i }, maxRetries: 2 }));
    const bulk = await client.jobs.bulk({ queueName: 'pgb-sdk', jobs });
    assert.equal(bulk.succeeded.length, 40);
    const attempts = new Map<number, number>();
    const worker = new Worker<{ i: number }>(client, { queue: 'pgb-sdk', concurrency: 8, leaseSeconds: 10 });
    worker.on('error', () => {});
    worker.handle(async (job) => {
      const n = (attempts.get(job.payload.i) ?? 0) + 1;
      attempts.set(job.payload.i, n);
      if (job.payload.i % 4 === 0 && n === 1) throw new Error('first attempt fails');
      return { i: job.payload.i };
    });
    await worker.start();
    try {
      await until('40 jobs completed', 30_000, async () => {
        const rows = await database.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = 'pgb-sdk' AND status = 'completed'");
        return rows.rows[0]!.n === 40;
      });
    } finally {
      await worker.stop({ graceMs: 5_000 });
    }
    assert.equal([...attempts.values()].filter((n) => n === 2).length, 10, 'every fourth job ran twice');
  });

  it('fires a cron schedule', async () => {
    const created = await server.request('POST', '/api/v1/schedules', { body: { name: 'pgb-tick', cron_expression: '* * * * * *', queue_name: 'pgb-cron', payload_template: { tick: true } } });
    assert.equal(created.status, 201, created.text);
    await until('a job from the schedule', 10_000, async () => {
      const rows = await database.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.schedule_runs WHERE schedule_id = $1 AND job_id IS NOT NULL', [created.body.id]);
      return rows.rows[0]!.n >= 2;
    });
    await server.request('POST', `/api/v1/schedules/${created.body.id}/pause`);
  });

  it('delivers realtime events (SSE)', async () => {
    const sse = await openSse(`${server.url}/api/v1/events`, { authorization: `Bearer ${server.apiKey}` });
    try {
      assert.equal(sse.status, 200);
      await sleep(200);
      const id = await enqueue(server, { queue_name: 'pgb-rt' });
      await sse.waitFor((e) => e.data.type === 'JobCreated' && e.data.data.job_id === id, 10_000);
    } finally {
      sse.close();
    }
  });

  it('elects a leader, and a second replica takes over within the lease when it stops', async (t) => {
    await until('first server leads', 10_000, async () => server.spool.leader.isLeader);
    let mark = Date.now();
    const lap = (what: string) => {
      t.diagnostic(`${what}: ${Date.now() - mark} ms`);
      mark = Date.now();
    };
    const replica: RunningSpool = await startSpool({ ...loadConfig({}), ...config, host: '127.0.0.1', port: 0, grpcPort: 0, logLevel: 'silent' }, { logger: pino({ level: 'silent' }), announce: () => {} });
    try {
      lap('replica started');
      await sleep(500);
      assert.ok(!(replica.leader.isLeader && server.spool.leader.isLeader), 'one leader at a time');
      await server.spool.stop(); // releases the lease and NOTIFYs spool_leader
      lap('first server stopped');
      // A released lease is taken on the NOTIFY, before the 5 s TTL would have run out.
      await until('the replica leads', 4_500, async () => replica.leader.isLeader);
      lap('replica leads');
    } finally {
      await replica.stop();
    }
  });
});

function pgbouncerVersionOrNone(): string {
  try {
    return pgbouncerVersion();
  } catch {
    return '(not installed)';
  }
}

describe('configuration', () => {
  it('reads DATABASE_DIRECT_URL and DATABASE_PREPARED_STATEMENTS, and refuses bad values by name', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://bouncer/spool', DATABASE_DIRECT_URL: 'postgres://pg/spool', DATABASE_PREPARED_STATEMENTS: 'false' });
    assert.equal(config.databaseDirectUrl, 'postgres://pg/spool');
    assert.equal(config.preparedStatements, false);
    assert.equal(loadConfig({}).preparedStatements, true);
    assert.equal(loadConfig({}).databaseDirectUrl, null);
    assert.throws(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: 'off' }), /DATABASE_PREPARED_STATEMENTS must be true or false \(got "off"\)/);
    assert.throws(() => loadConfig({ DATABASE_DIRECT_URL: 'postgres://pg/spool' }), /DATABASE_DIRECT_URL is set but DATABASE_URL is not/);
  });

  it('reads DATABASE_PLAN_CACHE_MODE: generic plans by default, no SET at all without prepared statements or with `server`', () => {
    assert.equal(loadConfig({}).planCacheMode, 'force_generic_plan');
    assert.equal(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'false' }).planCacheMode, null);
    assert.equal(loadConfig({ DATABASE_PLAN_CACHE_MODE: 'auto' }).planCacheMode, 'auto');
    assert.equal(loadConfig({ DATABASE_PLAN_CACHE_MODE: 'server' }).planCacheMode, null, 'the role\'s or the database\'s own setting stands');
    assert.equal(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'false', DATABASE_PLAN_CACHE_MODE: 'force_generic_plan' }).planCacheMode, 'force_generic_plan');
    assert.throws(() => loadConfig({ DATABASE_PLAN_CACHE_MODE: 'generic' }), /DATABASE_PLAN_CACHE_MODE must be one of force_generic_plan, auto, force_custom_plan, server \(got "generic"\)/);
  });
});
