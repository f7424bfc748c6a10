import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  bucketValue,
  decodeHistogram,
  histogramBucket,
  histogramPercentile,
  jobCancelMany,
  jobClaim,
  jobCompleteMany,
  jobExpire,
  jobFailMany,
  jobInsertMany,
  jobRescueExpired,
  queueStatsRollup,
  queueStatsRotate,
  statsTimeseries,
  type StatsPoint,
} from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { expireLease, insertJob } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('queue-stats-history');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const COUNTERS = ['enqueued', 'started', 'completed', 'failed', 'retried', 'deadlettered', 'expired'] as const;
type Counts = Record<(typeof COUNTERS)[number], number>;

/** A queue's counters over the last day, as the 24 h figures read them (rolled-up buckets plus rows not rolled up yet). */
async function activity(queue: string): Promise<Counts> {
  const row = (await t.pool.query(
    `SELECT ${COUNTERS.map((c) => `coalesce(sum(${c}), 0)::int AS ${c}`).join(', ')}
     FROM spool.queue_activity(now() - interval '24 hours') WHERE organization_id = $1 AND queue_name = $2`,
    [org, queue],
  )).rows[0];
  return row;
}

/** What the rollup wrote for a queue, from one of its tables. */
async function stored(table: 'minute' | 'hour', queue: string): Promise<Counts & { wait_count: number; run_count: number }> {
  return (await t.pool.query(
    `SELECT ${COUNTERS.map((c) => `coalesce(sum(${c}), 0)::int AS ${c}`).join(', ')},
            coalesce(sum(wait_count), 0)::int AS wait_count, coalesce(sum(run_count), 0)::int AS run_count
     FROM spool.queue_stats_${table} WHERE organization_id = $1 AND queue_name = $2`,
    [org, queue],
  )).rows[0];
}

async function drain(): Promise<void> {
  while ((await queueStatsRollup(t.pool, 50)).full);
}

async function makeDue(ids: string[]): Promise<void> {
  await t.pool.query("UPDATE spool.jobs SET scheduled_at = now() - interval '1 second', in_backoff = false WHERE id = ANY($1::uuid[])", [ids]);
}

describe('queue stats rollup', () => {
  it('counts every transition exactly once: batched rows by their jobs, re-claims, failures, expiries', async () => {
    await drain();
    const q = 'qs-counts';
    await jobInsertMany(t.pool, Array.from({ length: 5 }, (_, i) => ({ organizationId: org, queueName: q, payload: { i }, maxRetries: 2 })));
    const rows = await t.pool.query("SELECT count(*)::int AS n FROM spool.job_history WHERE queue_name = $1 AND event = 'create'", [q]);
    assert.equal(rows.rows[0].n, 1, 'five enqueues in one statement are one history row');
    const claimed = await jobClaim(t.pool, { organizationId: org, queueName: q, workerId: 'w1', limit: 3, leaseSeconds: 60 });
    assert.equal(claimed.length, 3);
    const [a, b, c] = claimed;
    assert.ok((await jobCompleteMany(t.pool, org, [a!, b!].map((j) => ({ id: j.id, workerId: 'w1', leaseId: j.lease_id })))).every((o) => o.ok));
    // c fails with retries left, becomes due, is claimed again (a re-claim: a row of its own) and completes.
    const [failed] = await jobFailMany(t.pool, org, [{ id: c!.id, workerId: 'w1', leaseId: c!.lease_id, error: 'boom' }]);
    assert.equal(failed!.ok && failed!.willRetry, true);
    await makeDue([c!.id]);
    const again = await jobClaim(t.pool, { organizationId: org, queueName: q, workerId: 'w2', limit: 5, leaseSeconds: 60 });
    const rerun = again.find((j) => j.id === c!.id);
    assert.ok(rerun, 'the retried job is claimed again');
    assert.equal(again.length, 3, 'with the two jobs never claimed');
    assert.ok((await jobCompleteMany(t.pool, org, [{ id: rerun.id, workerId: 'w2', leaseId: rerun.lease_id }]))[0]!.ok);
    // Of the other two: one's lease expires (back to pending), the other fails for good.
    const [d, e] = again.filter((j) => j.id !== c!.id);
    await expireLease(t.pool, d!.id);
    assert.equal((await jobRescueExpired(t.pool, 100)).rescued, 1);
    const [dead] = await jobFailMany(t.pool, org, [{ id: e!.id, workerId: 'w2', leaseId: e!.lease_id, error: 'fatal', retryable: false }]);
    assert.equal(dead!.ok && dead!.status, 'deadletter');
    // Two more enqueued: one expires before it runs, one is cancelled (counted by neither).
    const expiring = await insertJob(t.pool, org, q, { expiresAt: new Date(Date.now() + 60_000) });
    await t.pool.query("UPDATE spool.jobs SET expires_at = now() - interval '1 second' WHERE id = $1", [expiring]);
    assert.equal(await jobExpire(t.pool, 100), 1);
    const cancelled = await insertJob(t.pool, org, q);
    await jobCancelMany(t.pool, org, [cancelled]);

    const expected: Counts = { enqueued: 7, started: 6, completed: 3, failed: 3, retried: 2, deadlettered: 1, expired: 1 };
    assert.deepEqual(await activity(q), expected, 'before the rollup: read from the rows not rolled up yet');
    await drain();
    assert.deepEqual(await activity(q), expected, 'after it: from the buckets, nothing counted twice');
    const minutes = await stored('minute', q);
    const hours = await stored('hour', q);
    assert.deepEqual(minutes, { ...expected, wait_count: 3 + 2, run_count: 3 }, 'wait for the five first claims, run time for the three completions');
    assert.deepEqual(hours, minutes, 'the hour table holds the same');
    await drain();
    assert.deepEqual(await stored('minute', q), minutes, 'rolling up again adds nothing');

    // The re-run's run time counts from its own claim, not from its first start.
    const [timing] = (await t.pool.query(
      `SELECT (extract(epoch FROM j.completed_at - h.created_at) * 1000)::float8 AS rerun_ms, (extract(epoch FROM j.completed_at - j.started_at) * 1000)::float8 AS first_ms
       FROM spool.jobs j JOIN spool.job_history h ON h.job_id = j.id AND h.event = 'claim' WHERE j.id = $1`, [c!.id])).rows;
    const runs = (await t.pool.query('SELECT run_sum_ms FROM spool.queue_stats_hour WHERE organization_id = $1 AND queue_name = $2', [org, q])).rows;
    const runSum = runs.reduce((sum: number, r: { run_sum_ms: number }) => sum + r.run_sum_ms, 0);
    const ab = (await t.pool.query('SELECT sum(extract(epoch FROM completed_at - started_at) * 1000)::float8 AS ms FROM spool.jobs WHERE id = ANY($1::uuid[])', [[a!.id, b!.id]])).rows[0].ms;
    assert.ok(Math.abs(runSum - (ab + timing.rerun_ms)) < 0.01, `run sum ${runSum} = first runs ${ab} + re-run ${timing.rerun_ms} (not ${timing.first_ms})`);
  });

  it('settles a row that commits after a later one: counted once, when it appears', async () => {
    await drain();
    const q = 'qs-gap';
    const slow = await t.pool.connect();
    try {
      await slow.query('BEGIN');
      await jobInsertMany(slow, [{ organizationId: org, queueName: q, payload: {} }]);
      await insertJob(t.pool, org, q);
      await drain();
      assert.equal((await stored('minute', q)).enqueued, 1, 'the committed row is rolled up');
      assert.equal((await activity(q)).enqueued, 1, 'the uncommitted one is not seen yet');
      await slow.query('COMMIT');
    } finally {
      slow.release();
    }
    assert.equal((await activity(q)).enqueued, 2, 'once committed, the 24 h figures see it among the ids the rollup waits for');
    await drain();
    assert.equal((await stored('minute', q)).enqueued, 2);
    assert.equal((await activity(q)).enqueued, 2);
  });

  it('percentiles of wait and run time from a known distribution, within one bucket', async () => {
    await drain();
    const q = 'qs-percentiles';
    const n = 400;
    await jobInsertMany(t.pool, Array.from({ length: n }, () => ({ organizationId: org, queueName: q, payload: {} })));
    const claimed: { id: string; lease_id: string | null }[] = [];
    while (claimed.length < n) claimed.push(...await jobClaim(t.pool, { organizationId: org, queueName: q, workerId: 'w', limit: 100, leaseSeconds: 60 }));
    assert.ok((await jobCompleteMany(t.pool, org, claimed.map((j) => ({ id: j.id, workerId: 'w', leaseId: j.lease_id })))).every((o) => o.ok));
    // Job i waited 10·i ms and ran i ms (i = 1..n), as the job rows will tell the rollup.
    await t.pool.query(
      `UPDATE spool.jobs j SET created_at = j.started_at - x.i * interval '10 milliseconds', started_at = j.completed_at - x.i * interval '1 millisecond'
       FROM unnest($1::uuid[]) WITH ORDINALITY AS x(id, i) WHERE j.id = x.id`,
      [claimed.map((j) => j.id)],
    );
    await drain();
    const hour = Math.floor(Date.now() / 3_600_000) * 3600_000;
    const points = await statsTimeseries(t.pool, { organizationId: org, queueName: q, from: new Date(hour - 3_600_000), to: new Date(hour + 3_600_000), step: 3600 });
    const sum = (f: (p: StatsPoint) => number) => points.reduce((s, p) => s + f(p), 0);
    assert.equal(sum((p) => p.completed), n);
    assert.equal(sum((p) => p.started), n);
    const waits = points.filter((p) => p.wait_p50_ms !== null);
    const runs = points.filter((p) => p.run_p50_ms !== null);
    assert.equal(waits.length, 1, 'the claims of one minute');
    assert.equal(runs.length, 1, 'one completion statement');
    const within = (actual: number | null, exact: number, label: string) => {
      assert.ok(actual !== null && Math.abs(actual - exact) / exact <= 0.091, `${label}: ${actual} vs ${exact}`);
    };
    within(runs[0]!.run_p50_ms, 200, 'run p50');
    within(runs[0]!.run_p95_ms, 380, 'run p95');
    within(runs[0]!.run_p99_ms, 396, 'run p99');
    within(waits[0]!.wait_p50_ms, 2000, 'wait p50');
    within(waits[0]!.wait_p95_ms, 3800, 'wait p95');
    within(waits[0]!.wait_p99_ms, 3960, 'wait p99');
    const sums = (await t.pool.query('SELECT sum(run_sum_ms)::float8 AS run, sum(wait_sum_ms)::float8 AS wait FROM spool.queue_stats_hour WHERE organization_id = $1 AND queue_name = $2', [org, q])).rows[0];
    assert.ok(Math.abs(sums.run / n - (n + 1) / 2) < 0.01, `exact average run time: ${sums.run / n}`);
    assert.ok(Math.abs(sums.wait / n - 10 * (n + 1) / 2) < 0.1, `exact average wait: ${sums.wait / n}`);

    // Minute points add up to the hour, every minute present (zeros where nothing happened).
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    const byMinute = await statsTimeseries(t.pool, { organizationId: org, queueName: q, from: new Date(minute - 3_600_000), to: new Date(minute + 60_000), step: 60 });
    assert.equal(byMinute.length, 61);
    assert.ok(byMinute.every((p, i) => p.t.getTime() === minute - 3_600_000 + i * 60_000));
    assert.equal(byMinute.reduce((s, p) => s + p.completed, 0), n);
    // The organization's series adds its queues up; a filter of other queues sees none of it.
    const all = await statsTimeseries(t.pool, { organizationId: org, queueName: null, from: new Date(minute - 3_600_000), to: new Date(minute + 60_000), step: 60 });
    assert.ok(all.reduce((s, p) => s + p.completed, 0) >= n);
    const other = await statsTimeseries(t.pool, { organizationId: org, queueName: null, queueFilter: ['other-%'], from: new Date(minute - 3_600_000), to: new Date(minute + 60_000), step: 60 });
    assert.equal(other.reduce((s, p) => s + p.completed + p.enqueued, 0), 0);
  });

  it('histogram buckets: the SQL and the reader agree, and a bucket reads back within 9.1 %', async () => {
    const values = [0, 0.4, 1, 1.5, 7, 99.9, 1000, 12_345, 86_400_000];
    const sql = (await t.pool.query('SELECT array_agg(spool.stats_bucket(v) ORDER BY o) AS b FROM unnest($1::float8[]) WITH ORDINALITY AS x(v, o)', [values])).rows[0].b;
    assert.deepEqual(sql, values.map(histogramBucket));
    for (const v of values.filter((v) => v >= 1)) assert.ok(Math.abs(bucketValue(histogramBucket(v)) - v) / v <= 0.091, `${v}`);
    const merged = (await t.pool.query("SELECT spool.stats_hist_add(ARRAY[(3::bigint << 40) | 2, (9::bigint << 40) | 1], ARRAY[(3::bigint << 40) | 5, (1::bigint << 40) | 7]) AS h")).rows[0].h;
    assert.deepEqual(decodeHistogram(merged), [[1, 7], [3, 7], [9, 1]]);
    assert.equal(histogramPercentile([], 0.5), null);
    assert.equal(histogramPercentile([[1, 7], [3, 7], [9, 1]], 0.99), Math.round(bucketValue(9) * 10) / 10);
  });

  it('keeps 7 days of minutes and 90 of hours: the partition whose turn comes next is emptied whole', async () => {
    const insert = (table: 'minute' | 'hour', queue: string, age: string) => t.pool.query(
      `INSERT INTO spool.queue_stats_${table} (organization_id, queue_name, bucket, slot, completed)
       SELECT $1, $2, b, spool.stats_${table}_slot(b), 1 FROM (SELECT spool.stats_${table}(now() - $3::interval) AS b) x`,
      [org, queue, age],
    );
    await insert('minute', 'ring-8d', '8 days');
    await insert('minute', 'ring-7d', '7 days');
    await insert('minute', 'ring-now', '0 seconds');
    await insert('hour', 'ring-100d', '100 days');
    await insert('hour', 'ring-85d', '85 days');
    await insert('hour', 'ring-now', '0 seconds');
    const relations = async () => (await t.pool.query("SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'queue_stats_%'")).rows[0].n;
    const before = await relations();
    const emptied = await queueStatsRotate(t.pool);
    assert.equal(emptied.length, 2, `one partition of each ring: ${emptied.join(', ')}`);
    const left = async (table: string) => (await t.pool.query(`SELECT queue_name FROM spool.queue_stats_${table} WHERE queue_name LIKE 'ring-%' ORDER BY 1`)).rows.map((r) => r.queue_name);
    assert.deepEqual(await left('minute'), ['ring-7d', 'ring-now']);
    assert.deepEqual(await left('hour'), ['ring-85d', 'ring-now']);
    assert.deepEqual(await queueStatsRotate(t.pool), [], 'nothing more to empty until the next day');
    assert.equal(await relations(), before, 'no partition created or dropped');

    // History older than a ring keeps is not written into it (it would land in a partition being reused).
    await drain();
    await t.pool.query(
      `INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, to_status, created_at)
       VALUES ($1, gen_random_uuid(), 'ring-late', 'create', 'pending', now() - interval '8 days'),
              ($1, gen_random_uuid(), 'ring-late', 'create', 'pending', now() - interval '101 days')`,
      [org],
    );
    await drain();
    assert.equal((await stored('minute', 'ring-late')).enqueued, 0, 'minutes keep 7 days');
    assert.equal((await stored('hour', 'ring-late')).enqueued, 1, 'hours keep 90: the 8-day-old row, not the 101-day-old one');
  });
});
