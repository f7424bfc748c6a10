/**
 * Which failures answer 503 (retry) instead of 500: the errors are produced
 * by the real pg library against a real (or a closed) port, since their
 * shapes (a socket code, a SQLSTATE, or only a message) are what matters.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import pg from 'pg';
import { isTransientDatabaseError } from '../src/transient-database-error.js';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const failureOf = (promise: Promise<unknown>) => promise.then(() => assert.fail('expected a failure'), (err: unknown) => err);

describe('transient database errors', () => {
  it('PostgreSQL not listening (restarting): ECONNREFUSED from a client and from a pool', async () => {
    const port = await closedPort();
    const client = new pg.Client({ connectionString: `postgres://x@127.0.0.1:${port}/x` });
    assert.equal(isTransientDatabaseError(await failureOf(client.connect())), true);
    const pool = new pg.Pool({ connectionString: `postgres://x@127.0.0.1:${port}/x` });
    assert.equal(isTransientDatabaseError(await failureOf(pool.query('SELECT 1'))), true);
    await pool.end();
  });

  it('a connection terminated under a query, and a server shutting down (57P01)', async () => {
    const url = process.env.SPOOL_TEST_ADMIN_URL!;
    const victim = new pg.Client({ connectionString: url });
    victim.on('error', () => {});
    await victim.connect();
    const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const running = failureOf(victim.query('SELECT pg_sleep(10)'));
    const killer = new pg.Client({ connectionString: url });
    await killer.connect();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await killer.query('SELECT pg_terminate_backend($1)', [pid]);
    await killer.end();
    const err = (await running) as { code?: string; message?: string };
    assert.equal(isTransientDatabaseError(err), true, `${err.code} ${err.message}`);
    assert.equal(isTransientDatabaseError(await failureOf(victim.query('SELECT 1'))), true, 'the dead client is not queryable');
  });

  it('input and programming errors are not transient', async () => {
    const client = new pg.Client({ connectionString: process.env.SPOOL_TEST_ADMIN_URL! });
    await client.connect();
    try {
      assert.equal(isTransientDatabaseError(await failureOf(client.query("SELECT 'x'::int"))), false);
      assert.equal(isTransientDatabaseError(await failureOf(client.query('SELECT * FROM no_such_table'))), false);
    } finally {
      await client.end();
    }
    assert.equal(isTransientDatabaseError(new TypeError('x is undefined')), false);
    assert.equal(isTransientDatabaseError(null), false);
  });
});
