import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('schedapi');
});
after(async () => server.close());

const SCHEDULE_KEYS = ['id', 'organization_id', 'name', 'description', 'cron_expression', 'timezone', 'queue_name', 'payload_template', 'priority', 'max_retries', 'timeout_seconds', 'is_active', 'last_run_at', 'next_run_at', 'run_count', 'tags', 'metadata', 'created_at', 'updated_at', 'missed_policy'];

async function create(body: Record<string, unknown>) {
  return server.request('POST', '/api/v1/schedules', { body: { name: 'nightly', cron_expression: '0 30 2 * * *', queue_name: 'reports', payload_template: { report: 'daily' }, ...body } });
}

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(50);
  }
}

async function jobCount(queue: string): Promise<number> {
  return (await server.spool.db.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.jobs WHERE queue_name = $1', [queue])).rows[0]!.n;
}

describe('schedules API (docs/compatibility.md §3.9)', () => {
  it('creates a schedule (201) with every contract key, computing next_run_at in its time zone', async () => {
    const created = await create({ timezone: 'America/New_York', description: 'd', tags: { team: 'ops' }, metadata: { Owner: 'Me' }, priority: 5, max_retries: 1, timeout_seconds: 60 });
    assert.equal(created.status, 201);
    for (const key of SCHEDULE_KEYS) assert.ok(key in created.body, `${key} present`);
    assert.equal(created.body.cron_expression, '0 30 2 * * *');
    assert.equal(created.body.is_active, true);
    assert.equal(created.body.run_count, 0);
    assert.equal(created.body.last_run_at, null);
    assert.equal(created.body.missed_policy, 'once');
    assert.deepEqual(created.body.metadata, { Owner: 'Me' });
    const next = new Date(created.body.next_run_at);
    const local = new Intl.DateTimeFormat('en-GB', { timeZone: 'America/New_York', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).format(next);
    assert.ok(local === '02:30:00' || local === '03:00:00', `next run at ${local} New York time`);
    assert.ok(next.getTime() > Date.now());

    const got = await server.request('GET', `/api/v1/schedules/${created.body.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, created.body);
    const list = await server.request('GET', '/api/v1/schedules?limit=1000');
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.body) && list.body.some((s: { id: string }) => s.id === created.body.id));
  });

  it('stores the expression exactly as submitted and accepts 5 fields (extension)', async () => {
    const created = await create({ cron_expression: '*/15  9-17 * * 1-5', timezone: 'Europe/Kyiv', missed_policy: 'all' });
    assert.equal(created.status, 201);
    assert.equal(created.body.cron_expression, '*/15  9-17 * * 1-5');
    assert.equal(created.body.missed_policy, 'all');
    assert.equal(new Date(created.body.next_run_at).getUTCSeconds(), 0);
  });

  it('refuses invalid input with a 400 naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ cron_expression: '* * * *' }, /cron_expression.*6 space-separated fields/],
      [{ cron_expression: '61 * * * * *' }, /cron_expression.*second/],
      [{ cron_expression: '0 0 12 * * MON' }, /cron_expression/],
      [{ cron_expression: '0 0 0 31 2 *' }, /cron_expression never fires/],
      [{ timezone: 'Mars/Olympus' }, /timezone/],
      [{ payload_template: [1, 2] }, /payload_template/],
      [{ payload_template: 'text' }, /payload_template/],
      [{ payload_template: undefined }, /payload_template is required/],
      [{ name: '' }, /name/],
      [{ queue_name: 'bad queue' }, /queue_name/],
      [{ priority: 101 }, /priority/],
      [{ missed_policy: 'sometimes' }, /missed_policy must be one of skip, once, all/],
      [{ tags: [1] }, /tags/],
    ];
    for (const [body, pattern] of cases) {
      const response = await create(body);
      assert.equal(response.status, 400, `${JSON.stringify(body)} → ${response.status} ${response.text}`);
      assert.equal(response.body.code, 'VALIDATION_ERROR');
      assert.match(response.body.message, pattern);
    }
  });

  it('answers unknown and malformed ids with 404 on every route, and hides other organizations\' schedules', async () => {
    const other = await server.createOrganization();
    const mine = (await create({})).body.id;
    for (const id of ['nope', '00000000-0000-4000-8000-000000000000', mine]) {
      const auth = id === mine ? other.apiKey : undefined;
      assert.equal((await server.request('GET', `/api/v1/schedules/${id}`, { auth })).status, 404);
      assert.equal((await server.request('PUT', `/api/v1/schedules/${id}`, { auth, body: { name: 'x' } })).status, 404);
      assert.equal((await server.request('DELETE', `/api/v1/schedules/${id}`, { auth })).status, 404);
      for (const action of ['pause', 'resume', 'trigger']) assert.equal((await server.request('POST', `/api/v1/schedules/${id}/${action}`, { auth })).status, 404);
      assert.equal((await server.request('GET', `/api/v1/schedules/${id}/history`, { auth })).status, 404);
      assert.equal((await server.request('GET', `/api/v1/schedules/${id}/preview`, { auth })).status, 404);
    }
    const list = await server.request('GET', '/api/v1/schedules', { auth: other.apiKey });
    assert.deepEqual(list.body, []);
    assert.equal((await server.request('GET', '/api/v1/schedules', { auth: null })).status, 401);
  });

  it('updates partially; a new expression or zone recomputes next_run_at; a bad one is a 400 that changes nothing', async () => {
    const created = (await create({ description: 'keep me' })).body;
    const renamed = await server.request('PUT', `/api/v1/schedules/${created.id}`, { body: { name: 'renamed', payload_template: { v: 2 } } });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'renamed');
    assert.equal(renamed.body.description, 'keep me');
    assert.deepEqual(renamed.body.payload_template, { v: 2 });
    assert.equal(renamed.body.next_run_at, created.next_run_at);
    const retimed = await server.request('PUT', `/api/v1/schedules/${created.id}`, { body: { cron_expression: '0 0 12 * * *', timezone: 'Asia/Kolkata', description: null } });
    assert.equal(retimed.status, 200);
    assert.equal(new Date(retimed.body.next_run_at).toISOString().slice(11), '06:30:00.000Z');
    assert.equal(retimed.body.description, null);
    const bad = await server.request('PUT', `/api/v1/schedules/${created.id}`, { body: { cron_expression: 'every day' } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /cron_expression/);
    const badZone = await server.request('PUT', `/api/v1/schedules/${created.id}`, { body: { timezone: 'Nowhere/Land' } });
    assert.equal(badZone.status, 400);
    assert.match(badZone.body.message, /timezone/);
    const nullZone = await server.request('PUT', `/api/v1/schedules/${created.id}`, { body: { timezone: null } });
    assert.equal(nullZone.status, 400, 'a timezone can be changed, not cleared');
    assert.match(nullZone.body.message, /timezone/);
    assert.equal((await server.request('GET', `/api/v1/schedules/${created.id}`)).body.cron_expression, '0 0 12 * * *');
  });

  it('triggers exactly one pending job from the template now, also while paused, and records a manual run', async () => {
    const created = (await create({ queue_name: 'triggered', payload_template: { Hello: 'World' }, tags: { a: 1 }, priority: 9, max_retries: 0, timeout_seconds: 42 })).body;
    const paused = await server.request('POST', `/api/v1/schedules/${created.id}/pause`);
    assert.equal(paused.status, 200);
    assert.equal(paused.body.is_active, false);
    assert.equal(paused.body.next_run_at, null);
    const before = Date.now();
    const triggered = await server.request('POST', `/api/v1/schedules/${created.id}/trigger`);
    assert.equal(triggered.status, 200);
    assert.equal(triggered.body.scheduled_at, triggered.body.triggered_at);
    assert.ok(Math.abs(new Date(triggered.body.triggered_at).getTime() - before) < 5000);
    const job = await server.request('GET', `/api/v1/jobs/${triggered.body.job_id}`);
    assert.equal(job.status, 200);
    assert.equal(job.body.status, 'pending');
    assert.equal(job.body.queue_name, 'triggered');
    assert.deepEqual(job.body.payload, { Hello: 'World' });
    assert.deepEqual(job.body.tags, { a: 1 });
    assert.equal(job.body.priority, 9);
    assert.equal(job.body.max_retries, 0);
    assert.equal(job.body.timeout_seconds, 42);
    assert.equal(await jobCount('triggered'), 1);
    const after = (await server.request('GET', `/api/v1/schedules/${created.id}`)).body;
    assert.equal(after.run_count, 1);
    assert.ok(after.last_run_at);
    assert.equal(after.is_active, false);
    const history = await server.request('GET', `/api/v1/schedules/${created.id}/history`);
    assert.equal(history.status, 200);
    assert.equal(history.body.length, 1);
    assert.deepEqual(Object.keys(history.body[0]).sort(), ['completed_at', 'error_message', 'fire_time', 'id', 'job_id', 'manual', 'schedule_id', 'started_at', 'status']);
    assert.equal(history.body[0].job_id, triggered.body.job_id);
    assert.equal(history.body[0].status, 'completed');
    assert.equal(history.body[0].manual, true);
    assert.equal(history.body[0].schedule_id, created.id);
  });

  it('pause stops firing; resume continues from the next tick without a burst; history lists the runs newest first', async () => {
    const created = (await create({ cron_expression: '* * * * * *', queue_name: 'every-second' })).body;
    const fireTimes = async () => (await server.spool.db.query<{ fire_time: Date }>('SELECT fire_time FROM spool.schedule_runs WHERE schedule_id = $1 ORDER BY fire_time', [created.id])).rows.map((r) => r.fire_time.getTime());
    await until(async () => (await jobCount('every-second')) >= 2, 10_000);
    assert.equal((await server.request('POST', `/api/v1/schedules/${created.id}/pause`)).status, 200);
    // The pause waited for any firing in progress (row lock), so this count is final until resumed.
    const beforePause = await fireTimes();
    await sleep(2200);
    assert.deepEqual(await fireTimes(), beforePause, 'nothing fires while paused');
    const resumedAt = Date.now();
    const resumed = await server.request('POST', `/api/v1/schedules/${created.id}/resume`);
    assert.equal(resumed.status, 200);
    assert.equal(resumed.body.is_active, true);
    assert.ok(new Date(resumed.body.next_run_at).getTime() > resumedAt - 1000);
    await until(async () => (await fireTimes()).length > beforePause.length, 10_000);
    assert.equal((await server.request('POST', `/api/v1/schedules/${created.id}/pause`)).status, 200);
    const afterResume = (await fireTimes()).slice(beforePause.length);
    assert.ok(afterResume.every((t) => t > resumedAt - 1000), 'no tick of the paused period fired after resuming');
    assert.ok(afterResume.length <= Math.ceil((Date.now() - resumedAt) / 1000) + 1, `${afterResume.length} ticks since resuming: no burst`);
    assert.equal(await jobCount('every-second'), beforePause.length + afterResume.length, 'one job per run');
    const history = (await server.request('GET', `/api/v1/schedules/${created.id}/history?limit=2`)).body;
    assert.equal(history.length, 2);
    assert.ok(new Date(history[0].fire_time) > new Date(history[1].fire_time));
    assert.ok(history.every((run: { manual: boolean; status: string; job_id: string }) => !run.manual && run.status === 'completed' && run.job_id));
  });

  it('previews the next fire times of a schedule and of an unsaved expression (extensions)', async () => {
    const created = (await create({ cron_expression: '0 0 9 * * 1', timezone: 'Europe/Kyiv' })).body;
    const preview = await server.request('GET', `/api/v1/schedules/${created.id}/preview?count=3`);
    assert.equal(preview.status, 200);
    assert.equal(preview.body.next_runs.length, 3);
    assert.equal(preview.body.next_runs[0], created.next_run_at);
    const gaps = preview.body.next_runs.slice(1).map((t: string, i: number) => new Date(t).getTime() - new Date(preview.body.next_runs[i]).getTime());
    assert.ok(gaps.every((g: number) => Math.abs(g - 7 * 86400_000) <= 3600_000));
    // An extension's parameter: out of range is a 400 (docs/jobs-api.md, "Warnings"), not clamped like a contract list's limit.
    assert.equal((await server.request('GET', `/api/v1/schedules/${created.id}/preview?count=100000`)).status, 400);
    assert.equal((await server.request('GET', `/api/v1/schedules/${created.id}/preview?count=100`)).body.next_runs.length, 100);
    const unsaved = await server.request('POST', '/api/v1/schedules/preview', { body: { cron_expression: '0 30 2 * * *', timezone: 'America/New_York', count: 3, after: '2026-03-06T12:00:00Z' } });
    assert.equal(unsaved.status, 200);
    assert.deepEqual(unsaved.body.next_runs, ['2026-03-07T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z']);
    const invalid = await server.request('POST', '/api/v1/schedules/preview', { body: { cron_expression: '* * *' } });
    assert.equal(invalid.status, 400);
    assert.match(invalid.body.message, /cron_expression/);
  });

  it('documents the routes and marks the extensions in the OpenAPI description', async () => {
    const docs = await server.request('GET', '/docs/json', { auth: null });
    assert.equal(docs.status, 200);
    for (const path of ['/api/v1/schedules', '/api/v1/schedules/{id}', '/api/v1/schedules/{id}/trigger', '/api/v1/schedules/{id}/history']) assert.ok(docs.body.paths[path], path);
    assert.ok(docs.body.paths['/api/v1/schedules/preview'].post.tags.includes('extension'));
    assert.ok(docs.body.paths['/api/v1/schedules/{id}/preview'].get.tags.includes('extension'));
  });

  it('deletes a schedule (204) and then 404s', async () => {
    const created = (await create({})).body;
    const deleted = await server.request('DELETE', `/api/v1/schedules/${created.id}`);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    assert.equal((await server.request('GET', `/api/v1/schedules/${created.id}`)).status, 404);
  });
});
