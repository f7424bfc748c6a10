/**
 * PostgreSQL restarting under a running process: a connection that dies
 * while a transaction holds it between two statements must fail that
 * transaction, not crash the process, and must not go back to the pool.
 * (Found by `npm run chaos`: a replica died with an unhandled 'error' event
 * when PostgreSQL stopped while it ran its migrations.)
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { transaction } from '@spool/engine';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
before(async () => {
  t = await createTestDatabase('connloss');
});
after(async () => {
  await t.drop();
});

it('a transaction whose connection is terminated between statements rejects, and the pool recovers', async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    let victimPid = 0;
    const failed = await transaction(t.pool, async (client) => {
      victimPid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      // Terminated while idle in the transaction: the FATAL message arrives with no query running.
      await t.pool.query('SELECT pg_terminate_backend($1)', [victimPid]);
      await sleep(200);
      await client.query('SELECT 1');
    }).then(() => null, (err: Error) => err);
    assert.ok(failed, 'the transaction failed');
    assert.deepEqual(uncaught, [], 'no unhandled error event');
    const pids = new Set<number>();
    for (let i = 0; i < 5; i++) pids.add((await t.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    assert.ok(!pids.has(victimPid), 'the dead connection was not handed out again');
  } finally {
    process.off('uncaughtException', onUncaught);
  }
});
