/**
 * Plan limits are enforced on every path that creates the limited thing:
 * workers (REST and gRPC), API keys, schedules, workflows and
 * outgoing webhooks at the limit are refused with 403 LIMIT_EXCEEDED; jobs
 * also when a workflow, a schedule trigger or cron creates them. Concurrent
 * creates at limit - 1 let exactly one through. Usage never shows more than
 * 100 % of an enforced limit. An organization on a plan with room (unlimited,
 * enterprise) is not held back: the SDK suite's 10 workers at once, 4
 * workflows and 100 KB gRPC payloads.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient, toStruct } from '../../../test-support/grpc.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('planenforce', { grpcPort: 0 });
});
after(async () => server.close());

const ADMIN = { 'x-admin-key': 'test-admin-key' };

/** An organization on `plan`, its key exempt from the plan's rate limit. */
async function orgOn(plan: string, customLimits?: Record<string, unknown>) {
  const org = await server.createOrganization(plan);
  await server.spool.db.query('UPDATE spool.api_keys SET rate_limit = 10000 WHERE organization_id = $1', [org.organizationId]);
  if (customLimits) {
    const patched = await server.request('PATCH', `/api/v1/admin/organizations/${org.organizationId}`, { headers: ADMIN, body: { custom_limits: customLimits } });
    assert.equal(patched.status, 200, patched.text);
  }
  return org;
}

type Response = { status: number; body: any; text: string };

function assertLimit(response: Response, resource: string, current: number, limit: number): void {
  assert.equal(response.status, 403, response.text);
  assert.equal(response.body.code, 'LIMIT_EXCEEDED');
  assert.equal(response.body.error, 'limit_exceeded');
  assert.equal(response.body.resource, resource);
  assert.equal(response.body.current, current);
  assert.equal(response.body.limit, limit);
  assert.ok('plan' in response.body && 'upgrade_to' in response.body);
}

const call = (key: string, method: string, path: string, body?: unknown) => server.request(method, `/api/v1${path}`, { auth: key, body });
const schedule = (key: string, extra: Record<string, unknown> = {}) => call(key, 'POST', '/schedules', { name: 's', cron_expression: '0 0 3 * * *', queue_name: 'pe', payload_template: {}, ...extra });
const webhook = (key: string, extra: Record<string, unknown> = {}) => call(key, 'POST', '/outgoing-webhooks', { name: 'h', url: 'https://example.com/hook', events: ['job.completed'], ...extra });
const worker = (key: string, hostname: string, queue = 'pe') => call(key, 'POST', '/workers/register', { queue_name: queue, hostname });
const workflow = (key: string, jobs = 1) => call(key, 'POST', '/workflows', { name: 'wf', jobs: Array.from({ length: jobs }, (_, i) => ({ key: `k${i}`, queue_name: 'pe', payload: { i } })) });
const apiKey = (key: string) => call(key, 'POST', '/api-keys', { name: 'extra', rate_limit: 10000 });
const job = (key: string) => call(key, 'POST', '/jobs', { queue_name: 'pe', payload: {} });

async function usage(key: string): Promise<any> {
  return (await call(key, 'GET', '/organizations/usage')).body;
}

async function jobCount(organizationId: string): Promise<number> {
  const { rows } = await server.spool.db.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.jobs WHERE organization_id = $1', [organizationId]);
  return rows[0]!.n;
}

describe('limits refused at the limit on every creating path', () => {
  it('schedules: a second active schedule, resuming a paused one and PUT is_active: true are refused; paused ones are free', async () => {
    const org = await orgOn('free');
    assert.equal((await schedule(org.apiKey)).status, 201);
    const second = await schedule(org.apiKey);
    assertLimit(second, 'schedules', 1, 1);
    assert.match(second.body.message, /1 of 1 active schedules on the Free plan; pause or delete a schedule, or upgrade to starter/);
    const invalid = await schedule(org.apiKey, { cron_expression: 'not a cron' });
    assert.equal(invalid.status, 400, 'validation comes before plan limits');
    const paused = await schedule(org.apiKey, { is_active: false });
    assert.equal(paused.status, 201, 'a paused schedule does not count');
    assertLimit(await call(org.apiKey, 'POST', `/schedules/${paused.body.id}/resume`), 'schedules', 1, 1);
    assertLimit(await call(org.apiKey, 'PUT', `/schedules/${paused.body.id}`, { is_active: true }), 'schedules', 1, 1);
    assert.equal((await call(org.apiKey, 'PUT', `/schedules/${paused.body.id}`, { name: 'renamed' })).status, 200, 'other changes are not limited');
  });

  it('outgoing webhooks: a second enabled webhook and enabling a disabled one are refused', async () => {
    const org = await orgOn('free');
    assert.equal((await webhook(org.apiKey)).status, 201);
    assertLimit(await webhook(org.apiKey), 'webhooks', 1, 1);
    assert.equal((await webhook(org.apiKey, { events: ['no.such.event'] })).status, 400, 'validation comes before plan limits');
    const disabled = await webhook(org.apiKey, { enabled: false });
    assert.equal(disabled.status, 201);
    assertLimit(await call(org.apiKey, 'PUT', `/outgoing-webhooks/${disabled.body.id}`, { enabled: true }), 'webhooks', 1, 1);
  });

  it('workflows: none on free (limit 0, "not available"), and the limit on a plan that has some', async () => {
    const free = await orgOn('free');
    const refused = await workflow(free.apiKey);
    assertLimit(refused, 'workflows', 0, 0);
    assert.match(refused.body.message, /Running workflows are not available on the Free plan: upgrade to starter/);
    assert.equal(await jobCount(free.organizationId), 0, 'no job of the refused workflow was created');
    const starter = await orgOn('starter', { max_workflows: 1 });
    assert.equal((await workflow(starter.apiKey)).status, 201);
    assertLimit(await workflow(starter.apiKey), 'workflows', 1, 1);
  });

  it("workflows: their jobs count against active jobs and jobs per day", async () => {
    const org = await orgOn('starter', { max_active_jobs: 5, max_jobs_per_day: 8 });
    assertLimit(await workflow(org.apiKey, 6), 'active_jobs', 0, 5);
    assert.equal((await workflow(org.apiKey, 5)).status, 201);
    assertLimit(await job(org.apiKey), 'active_jobs', 5, 5);
    await server.spool.db.query("UPDATE spool.jobs SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(organization_id, queue_name, 'cancelled'), completed_at = now() WHERE organization_id = $1", [org.organizationId]);
    assertLimit(await workflow(org.apiKey, 4), 'jobs_per_day', 5, 8);
    assert.equal((await usage(org.apiKey)).usage.jobs_today.current, 5, 'the refused workflow reserved nothing');
  });

  it('API keys: a key beyond the limit, and re-activating a revoked one, are refused', async () => {
    const org = await orgOn('free');
    const second = await apiKey(org.apiKey);
    assert.equal(second.status, 201, second.text);
    assertLimit(await apiKey(org.apiKey), 'api_keys', 2, 2);
    assert.equal((await call(org.apiKey, 'DELETE', `/api-keys/${second.body.id}`)).status, 204);
    const third = await apiKey(org.apiKey);
    assert.equal(third.status, 201, 'a revoked key frees its place');
    assertLimit(await call(org.apiKey, 'PUT', `/api-keys/${second.body.id}`, { is_active: true }), 'api_keys', 2, 2);
    assert.equal((await call(org.apiKey, 'PUT', `/api-keys/${third.body.id}`, { name: 'renamed' })).status, 200);
  });

  it('workers over REST and gRPC: a second worker is refused, the same worker registering again is not', async () => {
    const org = await orgOn('free');
    const first = await worker(org.apiKey, 'host-a');
    assert.equal(first.status, 201, first.text);
    assert.equal((await worker(org.apiKey, 'host-a')).status, 201, 'a restart of the same worker (hostname and queue) is not another worker');
    const second = await worker(org.apiKey, 'host-b');
    assertLimit(second, 'workers', 1, 1);
    assert.match(second.body.message, /deregister a worker/);
    const client = grpcClient(`127.0.0.1:${server.grpcPort}`, org.apiKey);
    try {
      await assert.rejects(client.call('workers', 'Register', { queueName: 'pe', hostname: 'host-c' }), (err: { code: number; details: string }) => {
        assert.equal(err.code, status.RESOURCE_EXHAUSTED, err.details);
        assert.match(err.details, /1 of 1 workers/);
        return true;
      });
      assert.ok((await client.call('workers', 'Register', { queueName: 'pe', hostname: 'host-a' })).workerId);
    } finally {
      client.close();
    }
    await server.spool.db.query("UPDATE spool.workers SET status = 'offline' WHERE organization_id = $1", [org.organizationId]);
    assert.equal((await worker(org.apiKey, 'host-b')).status, 201, 'an offline worker frees its place');
  });

  it('jobs over gRPC Enqueue and POST /schedules/{id}/trigger meet the active-jobs limit', async () => {
    const org = await orgOn('starter', { max_active_jobs: 2, max_schedules: null });
    const client = grpcClient(`127.0.0.1:${server.grpcPort}`, org.apiKey);
    try {
      await client.call('queue', 'Enqueue', { queueName: 'pe', payload: toStruct({}) });
      const created = await schedule(org.apiKey);
      const triggered = await call(org.apiKey, 'POST', `/schedules/${created.body.id}/trigger`);
      assert.equal(triggered.status, 200, triggered.text);
      assertLimit(await call(org.apiKey, 'POST', `/schedules/${created.body.id}/trigger`), 'active_jobs', 2, 2);
      await assert.rejects(client.call('queue', 'Enqueue', { queueName: 'pe', payload: toStruct({}) }), (err: { code: number; details: string }) => {
        assert.equal(err.code, status.RESOURCE_EXHAUSTED, err.details);
        assert.match(err.details, /Active job limit reached/);
        return true;
      });
      assert.equal(await jobCount(org.organizationId), 2);
    } finally {
      client.close();
    }
  });

  it('cron: a tick over the active-jobs or daily limit creates no job and is recorded as a failed run with the reason', async () => {
    const org = await orgOn('starter', { max_active_jobs: 1 });
    assert.equal((await job(org.apiKey)).status, 201);
    const everySecond = await schedule(org.apiKey, { cron_expression: '* * * * * *' });
    assert.equal(everySecond.status, 201, everySecond.text);
    let runs: any[] = [];
    for (let i = 0; i < 100 && runs.length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      runs = (await call(org.apiKey, 'GET', `/schedules/${everySecond.body.id}/history`)).body;
    }
    assert.ok(runs.length >= 2, 'the schedule kept firing');
    for (const run of runs) {
      assert.equal(run.status, 'failed');
      assert.equal(run.job_id, null);
      assert.match(run.error_message, /^Not fired: Active job limit reached: 1 active jobs of 1 allowed on the Starter plan/);
    }
    assert.equal(await jobCount(org.organizationId), 1, 'cron did not bypass the limit');

    await server.spool.db.query("UPDATE spool.jobs SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(organization_id, queue_name, 'cancelled'), completed_at = now() WHERE organization_id = $1", [org.organizationId]);
    await server.request('PATCH', `/api/v1/admin/organizations/${org.organizationId}`, { headers: ADMIN, body: { custom_limits: { max_active_jobs: null, max_jobs_per_day: 2 } } });
    for (let i = 0; i < 100 && (await jobCount(org.organizationId)) < 2; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    // The next ticks find the day full; on a loaded machine the scheduler may take a few seconds to reach one.
    const dailyRefusal = (list: any[]) => list.some((run) => run.status === 'failed' && /^Not fired: Daily job limit reached: 2 of 2/.test(run.error_message));
    for (let i = 0; i < 100 && !dailyRefusal(runs); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      runs = (await call(org.apiKey, 'GET', `/schedules/${everySecond.body.id}/history`)).body;
    }
    assert.ok(dailyRefusal(runs), JSON.stringify(runs.slice(0, 3)));
    assert.equal(await jobCount(org.organizationId), 2, 'one job came from cron, then the day was full');
    assert.equal((await usage(org.apiKey)).usage.jobs_today.current, 2);
    await call(org.apiKey, 'POST', `/schedules/${everySecond.body.id}/pause`);
  });
});

describe('concurrent creates at limit - 1: exactly one succeeds', () => {
  const cases: [string, string, Record<string, unknown>, (key: string, i: number) => Promise<Response>][] = [
    ['schedules', 'starter', { max_schedules: 1 }, (key) => schedule(key)],
    ['webhooks', 'starter', { max_webhooks: 1 }, (key) => webhook(key)],
    ['workflows', 'starter', { max_workflows: 1 }, (key) => workflow(key)],
    ['workers', 'starter', { max_workers: 1 }, (key, i) => worker(key, `host-${i}`)],
    ['api_keys', 'starter', { max_api_keys: 2 }, (key) => apiKey(key)],
    ['active_jobs', 'starter', { max_active_jobs: 1 }, (key) => job(key)],
  ];
  for (const [resource, plan, limits, create] of cases) {
    it(resource, async () => {
      const org = await orgOn(plan, limits);
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => create(org.apiKey, i)));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [201, ...Array(11).fill(403)], results.map((r) => r.text).join('\n'));
      for (const refused of results.filter((r) => r.status === 403)) assert.equal(refused.body.resource, resource);
    });
  }
});

describe('usage of enforced limits', () => {
  it('never shows more than 100 % of an enforced limit, and reports the true count and whether each limit is enforced', async () => {
    const org = await orgOn('free');
    const db = server.spool.db;
    // As a free organization could hold them before limits were enforced, or after its limits were lowered.
    await db.query("INSERT INTO spool.schedules (organization_id, name, cron_expression, queue_name, payload_template) VALUES ($1, 'a', '0 0 3 * * *', 'q', '{}'), ($1, 'b', '0 0 3 * * *', 'q', '{}')", [org.organizationId]);
    await db.query("INSERT INTO spool.outgoing_webhooks (organization_id, name, url, events, enabled) SELECT $1, 'h' || g, 'https://example.com/' || g, '{job.created}', true FROM generate_series(1, 3) g", [org.organizationId]);
    await db.query("INSERT INTO spool.workflows (organization_id, name, status, total_jobs) VALUES ($1, 'w', 'running', 1)", [org.organizationId]);
    await db.query("INSERT INTO spool.queue_config (organization_id, queue_name) VALUES ($1, 'a'), ($1, 'b'), ($1, 'c')", [org.organizationId]);
    const info = await usage(org.apiKey);
    assert.deepEqual(info.usage.schedules, { current: 2, limit: 1, percentage: 100, is_disabled: false, enforced: true });
    assert.deepEqual(info.usage.webhooks, { current: 3, limit: 1, percentage: 100, is_disabled: false, enforced: true });
    assert.deepEqual(info.usage.workflows, { current: 1, limit: 0, percentage: null, is_disabled: true, enforced: true });
    assert.deepEqual(info.usage.queues, { current: 3, limit: 2, percentage: 150, is_disabled: false, enforced: false }, 'queues are reported, not enforced');
    for (const [name, item] of Object.entries<any>(info.usage)) {
      if (item.enforced && item.percentage !== null) assert.ok(item.percentage <= 100, `${name}: ${item.percentage}`);
    }
  });
});

describe('a plan with room holds nothing back (the SDK suite)', () => {
  for (const plan of ['unlimited', 'enterprise']) {
    it(`${plan}: 10 workers registered at once, 4 workflows and 100 KB gRPC payloads`, async () => {
      const org = await orgOn(plan);
      const workers = await Promise.all(Array.from({ length: 10 }, (_, i) => worker(org.apiKey, `sdk-${i}`)));
      assert.deepEqual(workers.map((r) => r.status), Array(10).fill(201));
      for (let i = 0; i < 4; i++) assert.equal((await workflow(org.apiKey, 3)).status, 201);
      const client = grpcClient(`127.0.0.1:${server.grpcPort}`, org.apiKey);
      try {
        const payload = toStruct({ blob: 'x'.repeat(100 * 1024) });
        const created = await Promise.all(Array.from({ length: 5 }, () => client.call('queue', 'Enqueue', { queueName: 'sdk', payload })));
        assert.ok(created.every((c: { created: boolean }) => c.created));
      } finally {
        client.close();
      }
    });
  }
});

describe('plan-limit transactions never take the whole pool', () => {
  it('with DATABASE_POOL_MAX=2, concurrent schedule triggers of several limited organizations (each insert needs a second connection) all finish', async () => {
    const small = await startTestServer('planpool', { poolMax: 2 });
    try {
      const orgs = await Promise.all(Array.from({ length: 3 }, async () => {
        const org = await small.createOrganization('starter');
        await small.spool.db.query('UPDATE spool.api_keys SET rate_limit = 10000 WHERE organization_id = $1', [org.organizationId]);
        const created = await small.request('POST', '/api/v1/schedules', { auth: org.apiKey, body: { name: 's', cron_expression: '0 0 3 * * *', queue_name: 'pe', payload_template: {} } });
        assert.equal(created.status, 201, created.text);
        return { key: org.apiKey, id: created.body.id as string };
      }));
      const triggers = orgs.flatMap((org) => Array.from({ length: 4 }, () => small.request('POST', `/api/v1/schedules/${org.id}/trigger`, { auth: org.key })));
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('triggers did not finish: the pool is exhausted')), 20_000); });
      const results = await Promise.race([Promise.all(triggers), stuck]).finally(() => clearTimeout(timer));
      assert.deepEqual(results.map((r) => r.status), Array(12).fill(200));
    } finally {
      await small.close();
    }
  });
});
