/**
 * The job state machine as the database enforces it (migration 022): its
 * table of moves equals JOB_MOVES and the list in docs/state-machine.md, and
 * raw writes, which bypass every operation, are held to it. (The operations
 * making the real moves are covered by the other engine tests.)
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { JOB_MOVES, JOB_STATUSES, type JobStatus } from '@spool/protocol';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { loadJobsAsIs } from '../../../test-support/job-fixtures.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('state-machine');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const key = (from: JobStatus | null, to: JobStatus) => `${from ?? '(new job)'} -> ${to}`;
const allowed = new Set(JOB_MOVES.map((m) => key(m.from, m.to)));
const REFUSED = 'SP001';

// The columns the other CHECKs of spool.jobs tie to a status: a lease exactly
// while processing, completed_at exactly when finished, scheduled_at when
// scheduled; and the partition (migration 046): a finished job is done.
const COLUMNS = `
  assigned_worker_id = CASE WHEN $2::text = 'processing' THEN 'w' END,
  lease_id = CASE WHEN $2::text = 'processing' THEN gen_random_uuid() END,
  lease_expires_at = CASE WHEN $2::text = 'processing' THEN now() + interval '1 hour' END,
  completed_at = CASE WHEN $2::text IN ('completed', 'failed', 'deadletter', 'cancelled') THEN now() END,
  scheduled_at = CASE WHEN $2::text = 'scheduled' THEN now() + interval '1 hour' END,
  in_backoff = false,
  phase = CASE WHEN $2::text IN ('completed', 'cancelled') THEN 'done' ELSE 'live' END,
  purge_on = CASE WHEN $2::text IN ('completed', 'cancelled') THEN spool.job_purge_on(organization_id, queue_name, $2::text) ELSE 'infinity' END`;
const MOVE = `UPDATE spool.jobs SET status = $2::text, ${COLUMNS} WHERE id = $1 RETURNING status`;
const INSERT = `
  INSERT INTO spool.jobs (organization_id, queue_name, status, payload, assigned_worker_id, lease_id, lease_expires_at, completed_at, scheduled_at)
  VALUES ($1, 'sm', $2::text, '{}',
          CASE WHEN $2::text = 'processing' THEN 'w' END,
          CASE WHEN $2::text = 'processing' THEN gen_random_uuid() END,
          CASE WHEN $2::text = 'processing' THEN now() + interval '1 hour' END,
          CASE WHEN $2::text IN ('completed', 'failed', 'deadletter', 'cancelled') THEN now() END,
          CASE WHEN $2::text = 'scheduled' THEN now() + interval '1 hour' END)
  RETURNING id`;

/** A new job in `status`, brought there by allowed moves (`failed`, which no move reaches, loaded as is). */
async function jobIn(status: JobStatus): Promise<string> {
  if (status === 'failed') return loadJobsAsIs(t.pool, async (c) => (await c.query<{ id: string }>(INSERT, [org, 'failed'])).rows[0]!.id);
  const start = status === 'scheduled' ? 'scheduled' : 'pending';
  const id = (await t.pool.query<{ id: string }>(INSERT, [org, start])).rows[0]!.id;
  const path: JobStatus[] = status === 'processing' || status === 'completed' || status === 'deadletter' ? ['processing'] : [];
  if (status !== start && status !== 'processing') path.push(status);
  for (const next of path) await t.pool.query(MOVE, [id, next]);
  return id;
}

async function statusOf(id: string): Promise<string> {
  return (await t.pool.query<{ status: string }>('SELECT status FROM spool.jobs WHERE id = $1', [id])).rows[0]!.status;
}

describe('the job state machine', () => {
  it('has the same moves in the database as in JOB_MOVES', async () => {
    const rows = await t.pool.query<{ from_status: JobStatus | null; to_status: JobStatus }>('SELECT from_status, to_status FROM spool.job_transitions');
    assert.deepEqual(rows.rows.map((r) => key(r.from_status, r.to_status)).sort(), [...allowed].sort());
    assert.equal(allowed.size, JOB_MOVES.length, 'each move is listed once');
  });

  it('is listed in docs/state-machine.md as in JOB_MOVES', () => {
    const doc = readFileSync(new URL('../../../docs/state-machine.md', import.meta.url), 'utf8');
    const section = doc.split('\n## Allowed moves\n')[1]?.split('\n## ')[0];
    assert.ok(section, 'docs/state-machine.md has an "Allowed moves" section');
    const listed = section.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| from ') && !line.startsWith('| --- ')).map((line) => {
      const [from, to, events] = line.split('|').slice(1, 4).map((cell) => cell.trim().replaceAll('`', ''));
      return `${key(from === '(new job)' ? null : (from as JobStatus), to as JobStatus)}: ${events}`;
    });
    assert.deepEqual(listed.sort(), JOB_MOVES.map((m) => `${key(m.from, m.to)}: ${m.events.join(', ')}`).sort());
  });

  it('lets a new job start only as listed', async () => {
    for (const status of JOB_STATUSES) {
      const attempt = t.pool.query(INSERT, [org, status]);
      if (allowed.has(key(null, status))) {
        await attempt;
      } else {
        await assert.rejects(attempt, (err: { code?: string; message?: string }) => {
          assert.equal(err.code, REFUSED, `start as ${status}`);
          assert.match(err.message ?? '', new RegExp(`a new job cannot start as ${status}\\b`));
          return true;
        });
      }
    }
  });

  it('accepts every listed move and refuses every other one, naming it', async () => {
    for (const from of JOB_STATUSES) {
      for (const to of JOB_STATUSES) {
        if (to === from) continue;
        const id = await jobIn(from);
        assert.equal(await statusOf(id), from);
        const attempt = t.pool.query<{ status: string }>(MOVE, [id, to]);
        if (allowed.has(key(from, to))) {
          assert.equal((await attempt).rows[0]!.status, to, `${from} -> ${to} accepted`);
        } else {
          await assert.rejects(attempt, (err: { code?: string; message?: string }) => {
            assert.equal(err.code, REFUSED, `${from} -> ${to} refused with its own SQLSTATE`);
            assert.match(err.message ?? '', new RegExp(`job ${id} cannot move from ${from} to ${to} `));
            return true;
          });
          assert.equal(await statusOf(id), from, `${from} -> ${to} left the job as it was`);
        }
      }
    }
  });

  it('lets any other column change, and status be set to the same value', async () => {
    for (const status of JOB_STATUSES) {
      const id = await jobIn(status);
      await t.pool.query("UPDATE spool.jobs SET status = status, priority = 5, last_error = 'noted' WHERE id = $1", [id]);
      assert.equal(await statusOf(id), status);
    }
  });

  it('refuses a whole statement when one of its rows makes a refused move', async () => {
    const pending = await jobIn('pending');
    const completed = await jobIn('completed');
    await assert.rejects(
      t.pool.query("UPDATE spool.jobs SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(organization_id, queue_name, 'cancelled'), completed_at = now() WHERE id = ANY($1::uuid[])", [[pending, completed]]),
      (err: { code?: string }) => err.code === REFUSED,
    );
    assert.equal(await statusOf(pending), 'pending', 'the allowed row of the statement did not move either');
  });

  it('refuses a finishing move that leaves the job in the live partition', async () => {
    const id = await jobIn('processing');
    await assert.rejects(
      t.pool.query("UPDATE spool.jobs SET status = 'completed', completed_at = now(), lease_id = NULL, lease_expires_at = NULL, assigned_worker_id = NULL WHERE id = $1", [id]),
      (err: { code?: string; message?: string }) => err.code === REFUSED && /stayed in spool\.jobs_live/.test(err.message ?? ''),
    );
    assert.equal(await statusOf(id), 'processing');
  });

  it('refuses a finished job that is moved back to the live partition, with or without a status change', async () => {
    const id = await jobIn('completed');
    await assert.rejects(t.pool.query("UPDATE spool.jobs SET phase = 'live' WHERE id = $1", [id]), (err: { code?: string }) => err.code === REFUSED);
    await assert.rejects(
      t.pool.query("UPDATE spool.jobs SET phase = 'live', status = 'pending', completed_at = NULL WHERE id = $1", [id]),
      (err: { code?: string }) => err.code === REFUSED,
    );
    const rows = await t.pool.query<{ status: string; phase: string }>('SELECT status, phase FROM spool.jobs WHERE id = $1', [id]);
    assert.deepEqual(rows.rows, [{ status: 'completed', phase: 'done' }]);
  });

  it('follows spool.job_transitions when its rows change', async () => {
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("DELETE FROM spool.job_transitions WHERE from_status = 'pending' AND to_status = 'processing'");
      const id = (await client.query<{ id: string }>(INSERT, [org, 'pending'])).rows[0]!.id;
      await client.query('SAVEPOINT claim');
      await assert.rejects(client.query(MOVE, [id, 'processing']), (err: { code?: string }) => err.code === REFUSED);
      await client.query('ROLLBACK TO SAVEPOINT claim');
      await client.query("INSERT INTO spool.job_transitions (from_status, to_status) VALUES ('completed', 'pending'), ('pending', 'processing')");
      await client.query(MOVE, [id, 'processing']);
      await client.query(MOVE, [id, 'completed']);
      assert.equal((await client.query(MOVE, [id, 'pending'])).rows[0]!.status, 'pending', 'a row added to the table is a move allowed');
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
    const id = await jobIn('completed');
    await assert.rejects(t.pool.query(MOVE, [id, 'pending']), (err: { code?: string }) => err.code === REFUSED, 'rolled back with the table');
  });
});
