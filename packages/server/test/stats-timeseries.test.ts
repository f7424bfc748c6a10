/**
 * GET /api/v1/stats/timeseries over real HTTP: what the rollup kept, scoped
 * to the caller's organization and its key's queues, and the 400s that say
 * what the parameters accept.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '@spool/server';
import { QueueStatsRollup } from '@spool/engine';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { assertError, claim, enqueue, restrictedKey } from './jobs-helpers.js';

let server: TestServer;

before(async () => {
  server = await startTestServer('stats_timeseries');
});
after(async () => server?.close());

type Point = Record<string, number | string | null>;
const COUNTS = ['enqueued', 'started', 'completed', 'failed', 'retried', 'deadlettered', 'expired'] as const;

async function series(query: string, auth?: string): Promise<{ step: number; from: string; to: string; queue_name: string | null; points: Point[] }> {
  const res = await server.request('GET', `/api/v1/stats/timeseries${query}`, { auth });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

function totals(points: Point[]): Record<(typeof COUNTS)[number], number> {
  return Object.fromEntries(COUNTS.map((c) => [c, points.reduce((sum, p) => sum + (p[c] as number), 0)])) as Record<(typeof COUNTS)[number], number>;
}

async function work(queue: string, outcomes: ('complete' | 'fail')[]): Promise<void> {
  for (let i = 0; i < outcomes.length + 1; i++) await enqueue(server, { queue_name: queue, max_retries: 3 });
  const jobs = await claim(server, { queue_name: queue, limit: outcomes.length });
  for (const [i, job] of jobs.entries()) {
    const res = await server.request('POST', `/api/v1/jobs/${job.id}/${outcomes[i]}`, { body: { worker_id: 'w1', lease_id: job.lease_id, ...(outcomes[i] === 'fail' ? { error: 'x' } : {}) } });
    assert.equal(res.status, 200, res.text);
  }
}

describe('GET /stats/timeseries', () => {
  before(async () => {
    await work('ts-alpha', ['complete', 'complete', 'fail']);
    await work('ts-beta', ['complete']);
  });

  it('one queue per minute over the last hour by default: every minute, counts and percentiles', async () => {
    const body = await series('?queue_name=ts-alpha');
    assert.equal(body.step, 60);
    assert.equal(body.queue_name, 'ts-alpha');
    assert.ok(body.points.length === 61 || body.points.length === 60, `${body.points.length} points`);
    assert.equal(body.points[0]!.t, body.from);
    assert.equal(Date.parse(body.to) - Date.parse(body.points.at(-1)!.t as string), 60_000);
    assert.deepEqual(Object.keys(body.points[0]!).sort(), [
      'completed', 'deadlettered', 'enqueued', 'expired', 'failed', 'retried', 'run_p50_ms', 'run_p95_ms', 'run_p99_ms', 'started', 't',
      'wait_p50_ms', 'wait_p95_ms', 'wait_p99_ms',
    ]);
    const expected = { enqueued: 4, started: 3, completed: 2, failed: 1, retried: 1, deadlettered: 0, expired: 0 };
    assert.deepEqual(totals(body.points), expected, 'counts are current before the rollup ran');
    await server.rollUp();
    const rolled = await series('?queue_name=ts-alpha');
    assert.deepEqual(totals(rolled.points), expected, 'and the same after it');
    const run = rolled.points.filter((p) => p.run_p50_ms !== null);
    assert.ok(run.length >= 1 && run.every((p) => typeof p.run_p99_ms === 'number' && p.run_p99_ms >= (p.run_p50_ms as number)));
    assert.ok(rolled.points.some((p) => typeof p.wait_p50_ms === 'number'));
    assert.ok(rolled.points.filter((p) => p.completed === 0 && p.started === 0).every((p) => p.run_p50_ms === null && p.wait_p50_ms === null));
  });

  it('every queue of the organization added up, by the hour; another organization sees only its own', async () => {
    await server.rollUp();
    const all = await series('?step=3600');
    assert.equal(all.queue_name, null);
    assert.ok(all.points.length === 168 || all.points.length === 169, `${all.points.length} hours in the default week`);
    assert.equal(totals(all.points).enqueued, 6);
    assert.equal(totals(all.points).completed, 3);
    const other = await server.createOrganization();
    assert.equal(totals((await series('?step=3600', other.apiKey)).points).enqueued, 0);
    assert.equal(totals((await series('?queue_name=ts-alpha', other.apiKey)).points).enqueued, 0, 'a queue of the same name elsewhere');
  });

  it('a key limited to queues reads only those: 403 for another, the sum of its own without queue_name', async () => {
    const key = await restrictedKey(server, ['ts-beta']);
    assert.equal(totals((await series('', key)).points).enqueued, 2);
    assertError(await server.request('GET', '/api/v1/stats/timeseries?queue_name=ts-alpha', { auth: key }), 403, 'ACCESS_DENIED', /ts-alpha/);
    const prefix = await restrictedKey(server, ['ts-*']);
    assert.equal(totals((await series('', prefix)).points).enqueued, 6);
    for (const role of ['worker', 'producer'] as const) {
      const created = await server.request('POST', '/api/v1/api-keys', { body: { name: role, role } });
      assert.equal(created.status, 201, created.text);
      assertError(await server.request('GET', '/api/v1/stats/timeseries', { auth: created.body.key }), 403, 'ACCESS_DENIED', /stats\.read/);
    }
    const reader = await server.request('POST', '/api/v1/api-keys', { body: { name: 'reader', role: 'read_only' } });
    assert.equal(totals((await series('', reader.body.key)).points).enqueued, 6);
  });

  it('from and to as RFC 3339 or unix seconds, rounded out to the step; nothing after the current bucket', async () => {
    const now = Date.now();
    const hour = Math.floor(now / 3_600_000) * 3_600_000;
    const a = await series(`?step=3600&from=${encodeURIComponent(new Date(hour - 2 * 3_600_000 + 1234).toISOString())}&to=${(hour - 3_600_000) / 1000 + 1}`);
    assert.deepEqual([a.from, a.to, a.points.length], [new Date(hour - 2 * 3_600_000).toISOString(), new Date(hour).toISOString(), 2]);
    const future = await series(`?from=${Math.floor(now / 1000) - 120}&to=${Math.floor(now / 1000) + 86_400}`);
    assert.equal(Date.parse(future.to), Math.floor(now / 60_000) * 60_000 + 60_000, 'to stops at the end of the current minute');
    const offset = await series(`?from=${encodeURIComponent('2030-01-01T10:00:00+02:00')}&to=${encodeURIComponent('2030-01-01T10:30:00+02:00')}`);
    assert.equal(offset.from, '2030-01-01T08:00:00.000Z');
    assert.deepEqual(offset.points, [], 'a range still to come has no points yet');
  });

  it('refuses what it cannot answer with a 400 that says what it accepts', async () => {
    const bad = async (query: string, message: RegExp) => {
      const res = await server.request('GET', `/api/v1/stats/timeseries${query}`);
      assertError(res, 400, 'VALIDATION_ERROR', message);
    };
    await bad('?step=30', /step must be 60 .* or 3600/);
    await bad('?step=60.0', /step must be 60/);
    await bad('?step=abc', /got "abc"/);
    await bad('?from=yesterday', /from must be an RFC 3339 date-time .* or unix seconds \(got "yesterday"\)/);
    await bad('?to=2025-01-31', /to must be an RFC 3339 date-time/);
    await bad('?to=2025-01-31T10:00:00', /to must be an RFC 3339 date-time with an offset/);
    await bad('?from=2025-02-30T10:00:00Z&to=2025-03-01T10:00:00Z', /from must be/);
    await bad('?from=1700000100&to=1700000000', /from must be before to/);
    await bad('?from=1700000000&to=1700000000', /from must be before to/);
    await bad(`?from=${Math.floor(Date.now() / 1000) - 3 * 86_400}`, /spans \d+ points of 60 s; at most 2400 .* or use step=3600/);
    await bad(`?step=3600&from=${Math.floor(Date.now() / 1000) - 200 * 86_400}`, /at most 2400/);
    const repeated = await server.request('GET', '/api/v1/stats/timeseries?from=1&from=2');
    assert.equal(repeated.status, 400, repeated.text);
  });
});

describe('STATS_ROLLUP', () => {
  it('on by default; anything but on or off stops the start with the variable named', () => {
    assert.equal(loadConfig({}).statsRollup, true);
    assert.equal(loadConfig({ STATS_ROLLUP: 'on' }).statsRollup, true);
    assert.equal(loadConfig({ STATS_ROLLUP: 'off' }).statsRollup, false);
    assert.throws(() => loadConfig({ STATS_ROLLUP: 'false' }), /^Error: STATS_ROLLUP must be one of on, off \(got "false"\)$/);
  });

  it('off: no rollup service runs, and the timeseries answers from what is stored', async () => {
    const off = await startTestServer('stats_rollup_off', { statsRollup: false });
    try {
      assert.equal(off.spool.maintenance.some((service) => service instanceof QueueStatsRollup), false);
      assert.ok(server.spool.maintenance.some((service) => service instanceof QueueStatsRollup), 'while a default server runs it');
      for (let i = 0; i < 3; i++) await enqueue(off, { queue_name: 'ts-off' });
      const res = await off.request('GET', '/api/v1/stats/timeseries?queue_name=ts-off');
      assert.equal(res.status, 200, res.text);
      assert.equal(totals(res.body.points).enqueued, 3, 'the rows not rolled up still count');
      await assert.rejects(off.rollUp(), /runs no queue-stats rollup/);
    } finally {
      await off.close();
    }
  });
});
