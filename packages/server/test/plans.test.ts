import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { loadJobsAsIs } from '../../../test-support/job-fixtures.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('plans');
});
after(async () => server.close());

const ADMIN = { 'x-admin-key': 'test-admin-key' };

/** An organization on `plan`, its key exempt from the plan's rate limit (rate-limit.test.ts covers that). */
async function orgOn(plan: string, customLimits?: Record<string, unknown>) {
  const org = await server.createOrganization(plan);
  await server.spool.db.query('UPDATE spool.api_keys SET rate_limit = 10000 WHERE organization_id = $1', [org.organizationId]);
  if (customLimits) {
    const patched = await server.request('PATCH', `/api/v1/admin/organizations/${org.organizationId}`, { headers: ADMIN, body: { custom_limits: customLimits } });
    assert.equal(patched.status, 200);
  }
  return org;
}

const enqueue = (apiKey: string, body: Record<string, unknown> = {}) =>
  server.request('POST', '/api/v1/jobs', { auth: apiKey, body: { queue_name: 'q', payload: { n: 1 }, ...body } });

function assertLimitExceeded(response: { status: number; body: any }, resource: string, current: number, limit: number, plan: string) {
  assert.equal(response.status, 403, JSON.stringify(response.body));
  assert.equal(response.body.code, 'LIMIT_EXCEEDED');
  assert.equal(response.body.error, 'limit_exceeded');
  assert.equal(response.body.resource, resource);
  assert.equal(response.body.current, current);
  assert.equal(response.body.limit, limit);
  assert.equal(response.body.plan, plan);
  assert.ok('upgrade_to' in response.body);
  assert.equal(typeof response.body.message, 'string');
}

describe('usage and limits (GET /organizations/usage)', () => {
  it('reports the free plan with its limits (10 active jobs, 2 queues, 1 worker) and every usage item', async () => {
    const org = await orgOn('free');
    const usage = await server.request('GET', '/api/v1/organizations/usage', { auth: org.apiKey });
    assert.equal(usage.status, 200);
    assert.equal(usage.body.plan, 'free');
    assert.equal(usage.body.plan_display_name, 'Free');
    assert.equal(usage.body.limits.max_active_jobs, 10);
    assert.equal(usage.body.limits.max_queues, 2);
    assert.equal(usage.body.limits.max_workers, 1);
    assert.equal(Object.keys(usage.body.limits).length, 18);
    assert.deepEqual(Object.keys(usage.body.usage).sort(), ['active_jobs', 'api_keys', 'jobs_today', 'queues', 'schedules', 'webhooks', 'workers', 'workflows']);
    assert.deepEqual(usage.body.usage.workflows, { current: 0, limit: 0, percentage: null, is_disabled: true, enforced: true });
    assert.deepEqual(usage.body.usage.api_keys, { current: 1, limit: 2, percentage: 50, is_disabled: false, enforced: true });
    assert.deepEqual(usage.body.warnings.map((w: { resource: string; severity: string }) => [w.resource, w.severity]), [['api_keys', 'warning']], 'free warns from 50 %');
  });

  it('counts queues, workers, schedules, workflows, webhooks and active jobs, and warns critically at 100 %', async () => {
    const org = await orgOn('free');
    const db = server.spool.db;
    await db.query("INSERT INTO spool.queue_config (organization_id, queue_name) VALUES ($1, 'a'), ($1, 'b')", [org.organizationId]);
    await db.query("INSERT INTO spool.workers (organization_id, queue_name, hostname, status) VALUES ($1, 'a', 'h1', 'healthy'), ($1, 'a', 'h2', 'offline')", [org.organizationId]);
    await db.query("INSERT INTO spool.schedules (organization_id, name, cron_expression, queue_name, payload_template) VALUES ($1, 's', '* * * * *', 'a', '{}')", [org.organizationId]);
    await db.query("INSERT INTO spool.workflows (organization_id, name, status, total_jobs) VALUES ($1, 'w1', 'running', 1), ($1, 'w2', 'completed', 1)", [org.organizationId]);
    await db.query("INSERT INTO spool.outgoing_webhooks (organization_id, name, url, events, enabled) VALUES ($1, 'h1', 'https://example.com/a', '{job.created}', true), ($1, 'h2', 'https://example.com/b', '{job.created}', false)", [org.organizationId]);
    for (let i = 0; i < 3; i += 1) assert.equal((await enqueue(org.apiKey)).status, 201);
    const usage = (await server.request('GET', '/api/v1/organizations/usage', { auth: org.apiKey })).body;
    assert.equal(usage.usage.queues.current, 2);
    assert.equal(usage.usage.workers.current, 1, 'offline workers do not count');
    assert.equal(usage.usage.schedules.current, 1);
    assert.equal(usage.usage.active_jobs.current, 3);
    assert.equal(usage.usage.active_jobs.percentage, 30);
    assert.equal(usage.usage.jobs_today.current, 3);
    assert.equal(usage.usage.workflows.current, 1, 'pending and running workflows count, finished ones do not');
    assert.equal(usage.usage.webhooks.current, 1, 'enabled webhooks count');
    const severity = Object.fromEntries(usage.warnings.map((w: { resource: string; severity: string }) => [w.resource, w.severity]));
    assert.equal(usage.usage.queues.enforced, false);
    assert.equal(severity.queues, undefined, 'queues are not enforced: reaching the figure refuses nothing, so no warning');
    assert.equal(severity.workers, 'critical');
    assert.equal(severity.schedules, 'critical');
    assert.equal(severity.active_jobs, undefined);
  });

  it('the unlimited plan has no limits and still reports jobs created today', async () => {
    const org = await orgOn('unlimited');
    for (let i = 0; i < 2; i += 1) await enqueue(org.apiKey);
    const usage = (await server.request('GET', '/api/v1/organizations/usage', { auth: org.apiKey })).body;
    // In a shape both official SDKs accept: tier enterprise, integers for payload, rate and retention.
    assert.equal(usage.plan, 'enterprise');
    assert.equal(usage.plan_display_name, 'Unlimited (self-hosted)');
    assert.deepEqual([usage.limits.tier, usage.limits.spool_tier, usage.limits.unlimited], ['enterprise', 'unlimited', true]);
    assert.equal(usage.limits.max_payload_size_bytes, 1024 * 1024, 'the request body cap');
    for (const key of ['rate_limit_requests_per_second', 'rate_limit_burst', 'job_retention_days', 'history_retention_days']) {
      assert.equal(usage.limits[key], 2147483647, key);
      assert.ok(usage.limits.no_limit.includes(key), key);
    }
    assert.equal(usage.limits.max_active_jobs, null, 'counts keep null for no limit');
    const summary = (await server.request('GET', '/api/v1/organizations', { auth: org.apiKey })).body[0];
    assert.deepEqual([summary.plan_tier, summary.unlimited], ['enterprise', true]);
    assert.deepEqual(usage.usage.jobs_today, { current: 2, limit: null, percentage: null, is_disabled: false, enforced: true });
    assert.deepEqual(usage.warnings, []);
  });
});

describe('job limits on POST /jobs', () => {
  it('refuses more active jobs than the plan allows with the LIMIT_EXCEEDED body', async () => {
    const org = await orgOn('free');
    for (let i = 0; i < 10; i += 1) assert.equal((await enqueue(org.apiKey)).status, 201);
    assertLimitExceeded(await enqueue(org.apiKey), 'active_jobs', 10, 10, 'free');
    const refused = await enqueue(org.apiKey);
    assert.equal(refused.body.upgrade_to, 'starter');
    await server.spool.db.query("UPDATE spool.jobs SET status = 'cancelled', phase = 'done', purge_on = spool.job_purge_on(organization_id, queue_name, 'cancelled'), completed_at = now() WHERE id = (SELECT id FROM spool.jobs WHERE organization_id = $1 LIMIT 1)", [org.organizationId]);
    assert.equal((await enqueue(org.apiKey)).status, 201, 'a finished job frees a slot');
  });

  it('refuses payloads above the plan size, but validates the body first', async () => {
    const org = await orgOn('free');
    const big = { blob: 'x'.repeat(65 * 1024) };
    assertLimitExceeded(await enqueue(org.apiKey, { payload: big }), 'payload_size', JSON.stringify(big).length, 65_536, 'free');
    const invalid = await enqueue(org.apiKey, { payload: big, priority: 1000 });
    assert.equal(invalid.status, 400, 'validation comes before plan limits');
    assert.equal((await enqueue(org.apiKey, { payload: { blob: 'x'.repeat(60 * 1024) } })).status, 201);
  });

  it('counts jobs per UTC day atomically; idempotent repeats do not count', async () => {
    const org = await orgOn('free', { max_jobs_per_day: 5, max_active_jobs: null });
    const first = await enqueue(org.apiKey, { idempotency_key: 'once' });
    assert.equal(first.status, 201);
    const repeat = await enqueue(org.apiKey, { idempotency_key: 'once' });
    assert.equal(repeat.status, 200);
    const usage = (await server.request('GET', '/api/v1/organizations/usage', { auth: org.apiKey })).body;
    assert.equal(usage.usage.jobs_today.current, 1, 'the repeat gave its reservation back');

    const results = await Promise.all(Array.from({ length: 10 }, () => enqueue(org.apiKey)));
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [201, 201, 201, 201, 403, 403, 403, 403, 403, 403], 'exactly the remaining quota is granted');
    const refused = results.find((r) => r.status === 403)!;
    assert.equal(refused.body.resource, 'jobs_per_day');
    assert.equal(refused.body.limit, 5);
    assert.equal(refused.body.current, 5);
    const { rows } = await server.spool.db.query<{ n: number }>('SELECT count(*)::int AS n FROM spool.jobs WHERE organization_id = $1', [org.organizationId]);
    assert.equal(rows[0]!.n, 5);

    await server.spool.db.query("UPDATE spool.organizations SET jobs_today_date = jobs_today_date - 1 WHERE id = $1", [org.organizationId]);
    assert.equal((await enqueue(org.apiKey)).status, 201, 'a new UTC day starts from zero');
  });

  it('a refusal that waited for a concurrent reservation reports the count it was refused at', async () => {
    const org = await orgOn('free', { max_jobs_per_day: 5, max_active_jobs: null });
    assert.equal((await enqueue(org.apiKey)).status, 201);
    // Another request's reservation holds the row while ours starts: ours
    // must wait, then find the day full.
    const other = await server.spool.db.connect();
    try {
      await other.query('BEGIN');
      await other.query('UPDATE spool.organizations SET jobs_today = 5 WHERE id = $1', [org.organizationId]);
      const waiting = enqueue(org.apiKey);
      for (;;) {
        const { rows } = await server.spool.db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        if (rows[0]!.n > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await other.query('COMMIT');
      assertLimitExceeded(await waiting, 'jobs_per_day', 5, 5, 'free');
    } finally {
      other.release();
    }
  });

  it('does not limit plans without limits', async () => {
    const org = await orgOn('unlimited');
    const results = await Promise.all(Array.from({ length: 25 }, () => enqueue(org.apiKey, { payload: { blob: 'y'.repeat(200 * 1024) } })));
    assert.ok(results.every((r) => r.status === 201));
  });
});

describe('billing', () => {
  it('GET /billing/status reports the plan and no Stripe customer', async () => {
    const org = await orgOn('starter');
    const status = await server.request('GET', '/api/v1/billing/status', { auth: org.apiKey });
    assert.equal(status.status, 200);
    assert.deepEqual(status.body, {
      plan_tier: 'starter',
      unlimited: false,
      stripe_subscription_id: null,
      stripe_subscription_status: null,
      stripe_current_period_end: null,
      stripe_cancel_at_period_end: null,
      has_stripe_customer: false,
    });
  });

  it('POST /billing/portal answers 404 without a payment provider, after validating the body', async () => {
    const ok = await server.request('POST', '/api/v1/billing/portal', { body: { return_url: 'https://example.com/back' } });
    assert.equal(ok.status, 404);
    assert.equal(ok.body.code, 'NOT_FOUND');
    const missing = await server.request('POST', '/api/v1/billing/portal', { body: {} });
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /return_url/);
    assert.equal((await server.request('POST', '/api/v1/billing/portal', { body: { return_url: 3 } })).status, 400);
  });
});

describe('GET /dashboard', () => {
  it('aggregates the organization’s jobs, queues and workers, with system.version', async () => {
    const org = await orgOn('unlimited');
    const db = server.spool.db;
    for (const queue of ['alpha', 'alpha', 'beta']) assert.equal((await enqueue(org.apiKey, { queue_name: queue })).status, 201);
    await db.query(
      `UPDATE spool.jobs SET status = 'processing', started_at = now(), lease_id = gen_random_uuid(), lease_expires_at = now() + interval '1 minute', assigned_worker_id = 'w'
       WHERE id = (SELECT id FROM spool.jobs WHERE organization_id = $1 AND queue_name = 'beta')`,
      [org.organizationId],
    );
    // A job that waited 2 s and ran 3 s, and one dead-lettered 2 hours ago, with the history rows
    // their transitions write (the dashboard's activity figures are rolled up from those).
    await loadJobsAsIs(db, (c) => c.query(
      `WITH jobs AS (
         INSERT INTO spool.jobs (organization_id, queue_name, status, payload, created_at, started_at, completed_at)
         VALUES ($1, 'alpha', 'completed', '{}', now() - interval '10 seconds', now() - interval '8 seconds', now() - interval '5 seconds'),
                ($1, 'alpha', 'deadletter', '{}', now() - interval '2 hours', now() - interval '2 hours' + interval '2 seconds', now() - interval '2 hours' + interval '5 seconds')
         RETURNING id, organization_id, queue_name, status, created_at, started_at, completed_at
       )
       INSERT INTO spool.job_history (organization_id, job_id, job_ids, queue_name, event, from_status, to_status, created_at)
       SELECT organization_id, NULL::uuid, ARRAY[id], queue_name, 'create', NULL, 'pending', created_at FROM jobs
       UNION ALL SELECT organization_id, NULL, ARRAY[id], queue_name, 'claim', 'pending', 'processing', started_at FROM jobs
       UNION ALL SELECT organization_id, NULL, ARRAY[id], queue_name, 'complete', 'processing', 'completed', completed_at FROM jobs WHERE status = 'completed'
       UNION ALL SELECT organization_id, id, NULL::uuid[], queue_name, 'fail_final', 'processing', 'deadletter', completed_at FROM jobs WHERE status = 'deadletter'`,
      [org.organizationId],
    ));
    await db.query("INSERT INTO spool.queue_config (organization_id, queue_name, enabled, paused_at) VALUES ($1, 'gamma', false, now())", [org.organizationId]);
    await db.query("INSERT INTO spool.workers (organization_id, queue_name, hostname, status) VALUES ($1, 'alpha', 'h1', 'healthy'), ($1, 'alpha', 'h2', 'degraded')", [org.organizationId]);

    const dashboard = await server.request('GET', '/api/v1/dashboard', { auth: org.apiKey });
    assert.equal(dashboard.status, 200);
    const d = dashboard.body;
    assert.deepEqual(Object.keys(d).sort(), ['jobs', 'queues', 'recent_activity', 'system', 'workers']);
    assert.equal(typeof d.system.version, 'string');
    assert.deepEqual(Object.keys(d.system).sort(), ['cache_status', 'database_status', 'environment', 'started_at', 'uptime_seconds', 'version']);
    assert.equal(d.jobs.total, 5);
    assert.equal(d.jobs.pending, 2);
    assert.equal(d.jobs.processing, 1);
    assert.equal(d.jobs.completed_24h, 1);
    assert.equal(d.jobs.failed_24h, 1);
    assert.equal(d.jobs.deadletter, 1);
    assert.ok(Math.abs(d.jobs.avg_wait_time_ms - 2000) < 50, String(d.jobs.avg_wait_time_ms));
    assert.ok(Math.abs(d.jobs.avg_processing_time_ms - 3000) < 50, String(d.jobs.avg_processing_time_ms));
    assert.deepEqual(d.queues, [
      { name: 'alpha', pending: 2, processing: 0, paused: false },
      { name: 'beta', pending: 0, processing: 1, paused: false },
      { name: 'gamma', pending: 0, processing: 0, paused: true },
    ]);
    assert.deepEqual(d.workers, { total: 2, healthy: 1, unhealthy: 1 });
    assert.deepEqual(d.recent_activity, { jobs_created_1h: 4, jobs_completed_1h: 1, jobs_failed_1h: 0 });

    const empty = await server.createOrganization();
    const blank = (await server.request('GET', '/api/v1/dashboard', { auth: empty.apiKey })).body;
    assert.equal(blank.jobs.total, 0);
    assert.equal(blank.jobs.avg_wait_time_ms, null);
    assert.deepEqual(blank.queues, []);
  });
});
