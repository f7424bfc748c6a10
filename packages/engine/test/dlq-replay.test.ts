/**
 * Paced DLQ replays (ops/dlq-replay-*.sql, services/dlq-replayer.ts): the
 * pace holds across servers, a replay survives its servers stopping and a
 * failed batch without replaying a job twice, cancel stops it between
 * batches, edits and the actor land on the jobs and in their history.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createPool, DlqReplayer, dlqReplayBatch, dlqReplayBatchSize, dlqReplayCancel, dlqReplayCreate, dlqReplayGet, dlqReplayList,
  jobRetryMany, type Db, type DlqReplayRow,
} from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { loadDeadLetters, loadJobsAsIs } from '../../../test-support/job-fixtures.js';
import { jobRow } from './helpers.js';

let t: TestDatabase;
let org: string;
const ACTOR = 'api_key:00000000-0000-4000-8000-00000000abcd';

before(async () => {
  t = await createTestDatabase('dlqreplay');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `count` dead-lettered jobs of `queue` (oldest first). */
function deadLetters(queue: string, count: number, extra: { error?: (i: number) => string; organizationId?: string } = {}): Promise<string[]> {
  return loadDeadLetters(t.pool, extra.organizationId ?? org, queue, count, extra);
}

/** Each job's replay history rows (event retry with details.replay_id = replay). */
async function replayEvents(replayId: string): Promise<Map<string, { created_at: Date; actor: string | null; details: any; queue_name: string }[]>> {
  const result = await t.pool.query<{ job_id: string; created_at: Date; actor: string | null; details: any; queue_name: string }>(
    `SELECT job_id::text, created_at, actor, details, queue_name FROM spool.job_history
     WHERE organization_id = $1 AND event = 'retry' AND details ->> 'replay_id' = $2 ORDER BY id`,
    [org, replayId],
  );
  const out = new Map<string, { created_at: Date; actor: string | null; details: any; queue_name: string }[]>();
  for (const row of result.rows) out.set(row.job_id, [...(out.get(row.job_id) ?? []), row]);
  return out;
}

async function statusCounts(ids: string[]): Promise<Record<string, number>> {
  const result = await t.pool.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM spool.jobs WHERE id = ANY($1::uuid[]) GROUP BY status', [ids]);
  return Object.fromEntries(result.rows.map((r) => [r.status, r.n]));
}

async function listedLeft(replayId: string): Promise<number> {
  const result = await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.dlq_replay_jobs WHERE replay_id = $1', [replayId]);
  return result.rows[0]!.n;
}

async function waitFor(replayId: string, until: (r: DlqReplayRow) => boolean, timeoutMs = 15_000): Promise<DlqReplayRow> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const replay = await dlqReplayGet(t.pool, org, replayId, null);
    assert.ok(replay, 'replay exists');
    if (until(replay)) return replay;
    if (Date.now() > deadline) assert.fail(`replay ${replayId} did not get there in time: ${JSON.stringify({ status: replay.status, done: replay.done, total: replay.total })}`);
    await sleep(20);
  }
}

/** Runs the replay's batches by hand (runOnce of a service that is not started) until it is finished. */
async function drain(replayer: DlqReplayer, replayId: string): Promise<DlqReplayRow> {
  for (let i = 0; i < 10_000; i++) {
    const replay = (await dlqReplayGet(t.pool, org, replayId, null))!;
    if (replay.status !== 'running') return replay;
    await t.pool.query('UPDATE spool.dlq_replays SET next_batch_at = now() WHERE id = $1', [replayId]);
    await replayer.runOnce();
  }
  assert.fail('replay never finished');
}

describe('paced DLQ replays', () => {
  it('batch sizes follow the pace: about ten batches a second, 1000 at most', () => {
    assert.equal(dlqReplayBatchSize(1), 1);
    assert.equal(dlqReplayBatchSize(15), 2);
    assert.equal(dlqReplayBatchSize(500), 50);
    assert.equal(dlqReplayBatchSize(10_000), 1000);
    assert.equal(dlqReplayBatchSize(null), 1000);
  });

  it('lists the matching dead letters at creation, oldest first, with the filters', async () => {
    const ids = await deadLetters('replay-filter', 20, { error: (i) => (i % 2 === 0 ? 'Timeout talking to SMTP_1' : 'bad address') });
    await deadLetters('replay-filter-other', 5);
    const byQueue = await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-filter', limit: 7, actor: ACTOR });
    assert.equal(byQueue!.total, 7);
    const listed = await t.pool.query<{ job_id: string }>('SELECT job_id::text FROM spool.dlq_replay_jobs WHERE replay_id = $1 ORDER BY position', [byQueue!.id]);
    assert.deepEqual(listed.rows.map((r) => r.job_id), ids.slice(0, 7), 'the oldest, in order');
    await dlqReplayCancel(t.pool, { organizationId: org, id: byQueue!.id, queues: null, actor: ACTOR });

    // error_contains is a case-insensitive substring; LIKE's wildcards in it are literal.
    const byError = await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-filter', errorContains: 'smtp_1', actor: ACTOR });
    assert.equal(byError!.total, 10);
    assert.equal(byError!.error_contains, 'smtp_1');
    const wildcard = await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-filter', errorContains: 'SMTP%', actor: ACTOR });
    assert.equal(wildcard!.total, 0);
    assert.equal(wildcard!.status, 'completed', 'a replay that matched nothing is finished at once');
    const range = await jobRow(t.pool, ids[5]!);
    const byTime = await dlqReplayCreate(t.pool, {
      organizationId: org, queueName: 'replay-filter', createdAfter: range.created_at, createdBefore: (await jobRow(t.pool, ids[9]!)).created_at, actor: ACTOR,
    });
    assert.equal(byTime!.total, 4, 'created_after inclusive, created_before exclusive');
    const byIds = await dlqReplayCreate(t.pool, { organizationId: org, jobIds: [ids[0]!.toUpperCase(), ids[19]!, ids[19]!], actor: ACTOR });
    assert.equal(byIds!.total, 2);
    assert.equal(byIds!.job_ids_count, 2);
    // A key's queues bound a replay without a queue.
    const scoped = await dlqReplayCreate(t.pool, { organizationId: org, queues: ['replay-filter-o%'], actor: ACTOR });
    assert.equal(scoped!.total, 5);
    for (const replay of [byError, byTime, byIds, scoped]) await dlqReplayCancel(t.pool, { organizationId: org, id: replay!.id, queues: null, actor: ACTOR });
  });

  it('1,000 jobs at 500 a second take about 2 s on two servers together, each job replayed once', async () => {
    const ids = await deadLetters('replay-paced', 1000);
    const second: Db = createPool({ connectionString: t.url, max: 4 });
    const replayers = [new DlqReplayer(t.pool, { idleMs: 50 }), new DlqReplayer(second, { idleMs: 50 })];
    try {
      const replay = await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-paced', perSecond: 500, actor: ACTOR });
      assert.equal(replay!.total, 1000);
      assert.equal(replay!.batch_size, 50);
      for (const replayer of replayers) replayer.start();
      const finished = await waitFor(replay!.id, (r) => r.status !== 'running');
      assert.equal(finished.status, 'completed');
      assert.equal(finished.done, 1000);
      assert.equal(finished.skipped, 0);
      assert.equal(await listedLeft(replay!.id), 0);

      const events = await replayEvents(replay!.id);
      assert.equal(events.size, 1000);
      for (const id of ids) assert.equal(events.get(id)?.length, 1, `job ${id} has one replay retry event`);
      assert.deepEqual(await statusCounts(ids), { pending: 1000 });
      // Both servers took batches.
      assert.ok(replayers.every((r) => (r.counters.get('batches') ?? 0) > 0), `batches per server: ${replayers.map((r) => r.counters.get('batches') ?? 0)}`);

      // The pace: 20 batches of 50, 100 ms apart, so the first and last start ~1.9 s apart.
      const times = [...events.values()].map((e) => e[0]!.created_at.getTime()).sort((a, b) => a - b);
      const spread = times.at(-1)! - times[0]!;
      assert.ok(spread >= 1500 && spread <= 8000, `first to last replay ${spread} ms (expected about 1900; more on a busy machine)`);
      // No second of it went much faster than 500 (one batch of slack).
      for (let i = 0; i < times.length; i++) {
        let j = i;
        while (j < times.length && times[j]! - times[i]! < 1000) j++;
        assert.ok(j - i <= 600, `${j - i} jobs replayed within 1 s from the ${i}th`);
      }
    } finally {
      for (const replayer of replayers) await replayer.stop();
      await second.end();
    }
  });

  it('a server stopping mid-way and another starting resumes the replay without replaying a job twice', async () => {
    const ids = await deadLetters('replay-resume', 300);
    // Slow enough (1.5 s in all) that a loaded machine still stops it mid-way.
    const replay = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-resume', perSecond: 200, actor: ACTOR }))!;
    assert.equal(replay.batch_size, 20);
    const first = new DlqReplayer(t.pool, { idleMs: 50 });
    first.start();
    await waitFor(replay.id, (r) => r.done > 0);
    await first.stop();
    const midway = (await dlqReplayGet(t.pool, org, replay.id, null))!;
    assert.equal(midway.status, 'running');
    assert.ok(midway.done > 0 && midway.done < 300, `stopped mid-way: ${midway.done} done`);
    assert.equal(await listedLeft(replay.id), 300 - midway.done, 'the list lost exactly the jobs replayed');
    assert.equal((await statusCounts(ids)).pending, midway.done, 'what the counters say happened, happened');

    const second = new DlqReplayer(t.pool, { idleMs: 50 });
    second.start();
    try {
      const finished = await waitFor(replay.id, (r) => r.status !== 'running');
      assert.equal(finished.status, 'completed');
      assert.equal(finished.done, 300);
    } finally {
      await second.stop();
    }
    const events = await replayEvents(replay.id);
    for (const id of ids) assert.equal(events.get(id)?.length, 1, `job ${id} has one replay retry event`);
  });

  it('a batch that fails rolls back whole, is retried, and the replay fails after five failures in a row', async () => {
    const ids = await deadLetters('replay-crash', 30);
    const replay = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-crash', perSecond: 100, actor: ACTOR }))!;
    assert.equal(replay.batch_size, 10);
    // The 15th job cannot be updated: its batch (the second) breaks half-way through its statement.
    await t.pool.query(`CREATE OR REPLACE FUNCTION public.replay_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$`);
    await t.pool.query(`CREATE TRIGGER replay_test_refuse BEFORE UPDATE ON spool.jobs FOR EACH ROW WHEN (OLD.id = '${ids[14]}') EXECUTE FUNCTION public.replay_test_refuse()`);
    // One round per runOnce: a longer round would reach the second batch itself
    // whenever the machine is slow enough for it to come due meanwhile.
    const replayer = new DlqReplayer(t.pool, { roundMs: 0 });
    try {
      await replayer.runOnce();
      let now = (await dlqReplayGet(t.pool, org, replay.id, null))!;
      assert.equal(now.done, 10, 'the first batch went through');
      await t.pool.query('UPDATE spool.dlq_replays SET next_batch_at = now() WHERE id = $1', [replay.id]);
      await replayer.runOnce();
      now = (await dlqReplayGet(t.pool, org, replay.id, null))!;
      assert.equal(now.status, 'running');
      assert.equal(now.done, 10, 'nothing of the failed batch is counted');
      assert.equal(now.error_count, 1);
      assert.match(now.error!, /disk on fire/);
      assert.ok(now.next_batch_at.getTime() > Date.now() + 500, 'the replay waits before trying again');
      assert.equal(await listedLeft(replay.id), 20, 'nor taken off the list');
      assert.equal((await statusCounts(ids.slice(10, 20))).deadletter, 10, 'nor moved');

      await t.pool.query('DROP TRIGGER replay_test_refuse ON spool.jobs');
      const finished = await drain(replayer, replay.id);
      assert.equal(finished.status, 'completed');
      assert.equal(finished.done, 30);
      assert.equal(finished.error, null);
      assert.equal(finished.error_count, 0);
      const events = await replayEvents(replay.id);
      for (const id of ids) assert.equal(events.get(id)?.length, 1, `job ${id} has one replay retry event`);

      // Five failures in a row fail the replay; what it replayed stays replayed.
      const doomedIds = await deadLetters('replay-doomed', 20);
      const doomed = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-doomed', perSecond: 100, actor: ACTOR }))!;
      await replayer.runOnce();
      await t.pool.query(`CREATE TRIGGER replay_test_refuse BEFORE UPDATE ON spool.jobs FOR EACH ROW WHEN (OLD.id = '${doomedIds[15]}') EXECUTE FUNCTION public.replay_test_refuse()`);
      const failedReplay = await drain(replayer, doomed.id);
      assert.equal(failedReplay.status, 'failed');
      assert.equal(failedReplay.error_count, 5);
      assert.equal(failedReplay.done, 10);
      assert.ok(failedReplay.finished_at);
      assert.equal(await listedLeft(doomed.id), 0, 'a failed replay keeps no list');
      assert.deepEqual(await statusCounts(doomedIds), { pending: 10, deadletter: 10 });
    } finally {
      await t.pool.query('DROP TRIGGER IF EXISTS replay_test_refuse ON spool.jobs');
    }
  });

  it('cancel stops a replay between batches; what it replayed stays replayed', async () => {
    const ids = await deadLetters('replay-cancel', 200);
    const replay = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-cancel', perSecond: 100, actor: ACTOR }))!;
    const replayer = new DlqReplayer(t.pool, { idleMs: 50 });
    replayer.start();
    try {
      await waitFor(replay.id, (r) => r.done >= 20);
      const cancelled = await dlqReplayCancel(t.pool, { organizationId: org, id: replay.id, queues: null, actor: 'api_key:canceller' });
      assert.ok(cancelled?.cancelled);
      assert.equal(cancelled.replay.status, 'cancelled');
      assert.equal(cancelled.replay.cancelled_by, 'api_key:canceller');
      const done = cancelled.replay.done;
      assert.equal(done % 10, 0, 'between batches');
      await sleep(300);
      const later = (await dlqReplayGet(t.pool, org, replay.id, null))!;
      assert.equal(later.done, done, 'no batch after the cancel');
      assert.equal(await listedLeft(replay.id), 0);
      assert.deepEqual(await statusCounts(ids), { pending: done, deadletter: 200 - done });
      // Cancelling again answers the replay as it is.
      const again = await dlqReplayCancel(t.pool, { organizationId: org, id: replay.id, queues: null, actor: ACTOR });
      assert.equal(again?.cancelled, false);
      assert.equal(again?.replay.cancelled_by, 'api_key:canceller');
    } finally {
      await replayer.stop();
    }
  });

  it('applies the edits, records the actor and the edits in each job\'s history, and skips jobs no longer dead-lettered', async () => {
    const ids = await deadLetters('replay-edit', 12);
    // Before the replay runs: one is retried by hand, one is purged.
    await jobRetryMany(t.pool, { organizationId: org, ids: [ids[3]!], resetRetryCount: true, from: ['deadletter'] });
    const replay = (await dlqReplayCreate(t.pool, {
      organizationId: org, queueName: 'replay-edit', edits: { priority: 7, maxRetries: 9, queueName: 'replay-edit-moved' }, actor: ACTOR,
    }))!;
    assert.equal(replay.total, 11);
    await t.pool.query('DELETE FROM spool.jobs WHERE id = $1', [ids[4]]);
    const finished = await drain(new DlqReplayer(t.pool), replay.id);
    assert.equal(finished.status, 'completed');
    assert.equal(finished.done, 10);
    assert.equal(finished.skipped, 1);

    const job = await jobRow(t.pool, ids[0]!);
    assert.equal(job.status, 'pending');
    assert.equal(job.queue_name, 'replay-edit-moved');
    assert.equal(job.priority, 7);
    assert.equal(job.max_retries, 9);
    assert.equal(job.retry_count, 0);
    assert.equal(job.last_error, null);
    assert.equal((await t.pool.query('SELECT 1 FROM spool.dead_letter_queue WHERE job_id = $1', [ids[0]])).rowCount, 0, 'off the DLQ');
    const untouched = await jobRow(t.pool, ids[3]!);
    assert.equal(untouched.queue_name, 'replay-edit', 'a job retried before its turn is not edited');

    const events = await replayEvents(replay.id);
    const [event] = events.get(ids[0]!)!;
    assert.equal(event!.actor, ACTOR);
    assert.equal(event!.queue_name, 'replay-edit-moved');
    assert.deepEqual(event!.details, {
      replay_id: replay.id,
      fields: ['priority', 'queue_name', 'max_retries'],
      from: { priority: 0, queue_name: 'replay-edit', max_retries: 3 },
      to: { priority: 7, queue_name: 'replay-edit-moved', max_retries: 9 },
    });
    // The job's timeline shows it too.
    const timeline = await t.pool.query<{ event: string; actor: string | null; details: any }>('SELECT event, actor, details FROM spool.job_timeline($1, $2)', [org, ids[0]]);
    assert.ok(timeline.rows.some((r) => r.event === 'retry' && r.actor === ACTOR && r.details.replay_id === replay.id));

    // Without edits the details are only the replay.
    const plainIds = await deadLetters('replay-plain', 2);
    const plain = (await dlqReplayCreate(t.pool, { organizationId: org, jobIds: plainIds, actor: ACTOR }))!;
    await drain(new DlqReplayer(t.pool), plain.id);
    const plainEvents = await replayEvents(plain.id);
    assert.deepEqual(plainEvents.get(plainIds[0]!)![0]!.details, { replay_id: plain.id });
  });

  it('a job replayed and dead-lettered again during the replay is not replayed again by it', async () => {
    const ids = await deadLetters('replay-again', 4);
    const replay = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-again', perSecond: 10, actor: ACTOR }))!;
    assert.equal(replay.batch_size, 1);
    const replayer = new DlqReplayer(t.pool);
    await replayer.runOnce();
    assert.equal((await jobRow(t.pool, ids[0]!)).status, 'pending');
    // It fails at once, back into the DLQ.
    await loadJobsAsIs(t.pool, (c) => c.query("UPDATE spool.jobs SET status = 'deadletter', last_error = 'again', completed_at = now() WHERE id = $1", [ids[0]]));
    const finished = await drain(replayer, replay.id);
    assert.equal(finished.done, 4);
    assert.equal((await jobRow(t.pool, ids[0]!)).status, 'deadletter');
    assert.equal((await replayEvents(replay.id)).get(ids[0]!)?.length, 1);
  });

  it('a batch taken by one server is not run by another at the same time', async () => {
    await deadLetters('replay-lock', 5);
    const replay = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-lock', actor: ACTOR }))!;
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT 1 FROM spool.dlq_replays WHERE id = $1 FOR UPDATE', [replay.id]);
      assert.equal(await dlqReplayBatch(t.pool, { organizationId: org, id: replay.id, batchSize: replay.batch_size }), null, 'skipped, not waited for');
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
    const after = await dlqReplayBatch(t.pool, { organizationId: org, id: replay.id, batchSize: replay.batch_size });
    assert.equal(after?.moved, 5);
    assert.equal(after?.status, 'completed');
  });

  it('batches racing from four connections share an unpaced replay: every job once, completed when the list is empty', async () => {
    const ids = await deadLetters('replay-race', 400);
    const replay = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'replay-race', actor: ACTOR }))!;
    const pools = Array.from({ length: 4 }, () => createPool({ connectionString: t.url, max: 1 }));
    try {
      let moved = 0;
      let finished = 0;
      await Promise.all(pools.map(async (pool) => {
        for (let i = 0; i < 500; i++) {
          const after = await dlqReplayBatch(pool, { organizationId: org, id: replay.id, batchSize: 7 });
          if (after) {
            moved += after.moved;
            if (after.status === 'completed') finished += 1;
          }
          if ((await dlqReplayGet(pool, org, replay.id, null))!.status !== 'running') return;
        }
      }));
      assert.equal(moved, 400);
      assert.equal(finished, 1, 'one batch completed it');
      const done = (await dlqReplayGet(t.pool, org, replay.id, null))!;
      assert.deepEqual([done.status, done.done, done.skipped, done.taken_upto], ['completed', 400, 0, 400]);
      const events = await replayEvents(replay.id);
      for (const id of ids) assert.equal(events.get(id)?.length, 1, `job ${id} has one replay retry event`);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('a queue-scoped caller reaches only the replays within its queues', async () => {
    await deadLetters('scope-a', 1);
    await deadLetters('scope-b', 1);
    const ofA = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'scope-a', actor: ACTOR }))!;
    const scopedAll = (await dlqReplayCreate(t.pool, { organizationId: org, queues: ['scope-%'], actor: ACTOR }))!;
    const everything = (await dlqReplayCreate(t.pool, { organizationId: org, jobIds: ['00000000-0000-4000-8000-000000000001'], actor: ACTOR }))!;
    const movingOut = (await dlqReplayCreate(t.pool, { organizationId: org, queueName: 'scope-a', edits: { queueName: 'elsewhere' }, actor: ACTOR }))!;
    const reach = async (queues: string[] | null) => {
      const seen = new Set((await dlqReplayList(t.pool, { organizationId: org, queues, limit: 100, offset: 0 })).map((r) => r.id));
      return [ofA, scopedAll, everything, movingOut].map((r) => seen.has(r.id));
    };
    assert.deepEqual(await reach(null), [true, true, true, true]);
    assert.deepEqual(await reach(['scope-a']), [true, false, false, false]);
    assert.deepEqual(await reach(['scope%']), [true, true, false, false]);
    assert.deepEqual(await reach(['scope-%', 'elsewhere']), [true, true, false, true]);
    assert.deepEqual(await reach(['scope-b']), [false, false, false, false]);
    assert.equal(await dlqReplayGet(t.pool, org, scopedAll.id, ['scope-a']), null);
    assert.equal(await dlqReplayCancel(t.pool, { organizationId: org, id: scopedAll.id, queues: ['scope-a'], actor: ACTOR }), null);
    assert.equal((await dlqReplayGet(t.pool, org, scopedAll.id, null))!.status, 'running', 'untouched');
    // Another organization sees none of them.
    const other = await createOrganization(t.pool);
    assert.equal(await dlqReplayGet(t.pool, other, ofA.id, null), null);
    assert.deepEqual(await dlqReplayList(t.pool, { organizationId: other, queues: null, limit: 100, offset: 0 }), []);
    for (const r of [ofA, scopedAll, everything, movingOut]) await dlqReplayCancel(t.pool, { organizationId: org, id: r.id, queues: null, actor: ACTOR });
  });

  it('refuses an eleventh running replay of an organization', async () => {
    const other = await createOrganization(t.pool);
    await deadLetters('replay-many', 1, { organizationId: other });
    // One job may be listed by several replays: the first to reach it replays it.
    for (let i = 0; i < 10; i++) {
      const replay = await dlqReplayCreate(t.pool, { organizationId: other, queueName: 'replay-many', perSecond: 1, actor: ACTOR });
      assert.equal(replay?.status, 'running');
    }
    assert.equal(await dlqReplayCreate(t.pool, { organizationId: other, queueName: 'replay-many', actor: ACTOR }), null);
    assert.equal((await dlqReplayList(t.pool, { organizationId: other, queues: null, limit: 100, offset: 0 })).length, 10);
  });
});
