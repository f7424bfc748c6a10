import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const OPERATOR = 'operator-secret';
let server: TestServer;
let generated: TestServer;
const announced: string[] = [];
before(async () => {
  server = await startTestServer('metrics', { metricsRefreshMs: 100, metricsToken: OPERATOR });
  generated = await startTestServer('metricstoken', {}, { announce: (message) => announced.push(message) });
});
after(async () => {
  await server.close();
  await generated.close();
});

async function scrape(target: TestServer, auth: string | null = OPERATOR): Promise<{ status: number; type: string; text: string }> {
  const response = await fetch(`${target.url}/metrics`, { headers: auth ? { authorization: `Bearer ${auth}` } : {} });
  return { status: response.status, type: response.headers.get('content-type') ?? '', text: await response.text() };
}

function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

async function until<T>(probe: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('GET /metrics', () => {
  it('answers the operator token with Prometheus text: spooled_, http_ and process_ lines', async () => {
    const first = await scrape(server);
    assert.equal(first.status, 200);
    assert.match(first.type, /^text\/plain/);
    assert.match(first.text, /^# HELP spooled_jobs /m);
    assert.match(first.text, /^spooled_workers\{status="healthy"\} 0$/m);
    assert.match(first.text, /^spooled_maintenance_operations_total|^# TYPE spooled_maintenance_operations_total counter/m);
    assert.match(first.text, /^process_cpu_user_seconds_total /m);
    const second = await scrape(server);
    assert.match(second.text, /^http_requests_total\{method="GET",route="\/metrics",status_code="200"\} \d+/m);
  });

  it('reflects an enqueued job, its queue age and its transition after a refresh', async () => {
    await scrape(server);
    const created = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'metrics-q', payload: {} } });
    assert.equal(created.status, 201);
    const labels = { organization_id: server.organizationId, queue: 'metrics-q' };
    const pending = await until(async () => sample((await scrape(server)).text, 'spooled_jobs', { ...labels, status: 'pending' }));
    assert.equal(pending, 1);
    const age = sample((await scrape(server)).text, 'spooled_queue_oldest_pending_age_seconds', labels);
    assert.ok(age !== undefined && age >= 0 && age < 60, `age ${age}`);
    // Counters trail the gauges by one refresh (they wait for in-flight commits).
    const createdCount = await until(async () => sample((await scrape(server)).text, 'spooled_job_transitions_total', { ...labels, status: 'pending' }));
    assert.equal(createdCount, 1);
  });

  it('observes claim latency and processing duration, and counts the completion', async () => {
    await scrape(server);
    const labels = { organization_id: server.organizationId, queue: 'metrics-done' };
    await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'metrics-done', payload: {} } });
    const claimed = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'metrics-done', worker_id: 'w1', limit: 10 } });
    assert.equal(claimed.body.jobs.length, 1);
    const job = claimed.body.jobs[0];
    const done = await server.request('POST', `/api/v1/jobs/${job.id}/complete`, { body: { worker_id: 'w1', lease_id: job.lease_id } });
    assert.equal(done.status, 200);
    const text = (await scrape(server)).text;
    assert.equal(sample(text, 'spooled_job_start_latency_seconds_count', labels), 1);
    assert.equal(sample(text, 'spooled_job_processing_duration_seconds_count', labels), 1);
    const completed = await until(async () => sample((await scrape(server)).text, 'spooled_job_transitions_total', { ...labels, status: 'completed' }));
    assert.equal(completed, 1);
    const after = (await scrape(server)).text;
    for (const name of ['spooled_jobs_enqueued_total', 'spooled_jobs_started_total', 'spooled_jobs_completed_total']) assert.equal(sample(after, name, labels), 1, name);
    for (const name of ['spooled_jobs_failed_total', 'spooled_jobs_deadlettered_total']) assert.equal(sample(after, name, labels), undefined, name);
    assert.equal(sample((await scrape(server)).text, 'spooled_jobs', { ...labels, status: 'processing' }), 0);
  });

  it('counts failed attempts and dead-lettered jobs under their own names', async () => {
    const labels = { organization_id: server.organizationId, queue: 'metrics-fail' };
    await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'metrics-fail', payload: {}, max_retries: 1 } });
    for (let attempt = 0; attempt < 2; attempt++) {
      const claimed = await until(async () => {
        const answer = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'metrics-fail', worker_id: 'w1', limit: 1 } });
        return answer.body.jobs[0];
      });
      const failed = await server.request('POST', `/api/v1/jobs/${claimed.id}/fail`, { body: { worker_id: 'w1', lease_id: claimed.lease_id, error: 'boom' } });
      assert.equal(failed.status, 200);
      // The retry waits out its backoff.
      if (attempt === 0) await server.spool.db.query("UPDATE spool.jobs SET scheduled_at = now(), in_backoff = false WHERE id = $1", [claimed.id]);
    }
    const deadlettered = await until(async () => sample((await scrape(server)).text, 'spooled_jobs_deadlettered_total', labels));
    assert.equal(deadlettered, 1);
    const text = (await scrape(server)).text;
    assert.equal(sample(text, 'spooled_jobs_failed_total', labels), 2, 'both attempts failed');
    assert.equal(sample(text, 'spooled_jobs_started_total', labels), 2, 'a re-run is a start');
    assert.equal(sample(text, 'spooled_jobs_completed_total', labels), undefined);
  });

  it('does not show a queue of another organization under the wrong labels', async () => {
    const other = await server.createOrganization();
    await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'shared-name', payload: {} }, auth: other.apiKey });
    const count = await until(async () => sample((await scrape(server)).text, 'spooled_jobs', { organization_id: other.organizationId, queue: 'shared-name', status: 'pending' }));
    assert.equal(count, 1);
    assert.equal(sample((await scrape(server)).text, 'spooled_jobs', { organization_id: server.organizationId, queue: 'shared-name', status: 'pending' }), undefined);
  });

  it('is never public: no credential or a wrong one is 401', async () => {
    for (const auth of [null, 'wrong', 'sk_test_wrong']) {
      const answer = await scrape(server, auth);
      assert.equal(answer.status, 401, `credential ${auth}`);
      assert.doesNotMatch(answer.text, /organization_id|spooled_jobs\{/);
    }
  });

  it("an organization's API key sees only its own series, of its key's queues", async () => {
    const other = await server.createOrganization();
    await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'tenant-only-a', payload: {} } });
    await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'tenant-only-b', payload: {} } });
    await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'other-org-queue', payload: {} }, auth: other.apiKey });
    await until(async () => sample((await scrape(server)).text, 'spooled_jobs', { organization_id: other.organizationId, queue: 'other-org-queue', status: 'pending' }));
    const own = await scrape(server, server.apiKey);
    assert.equal(own.status, 200);
    assert.equal(sample(own.text, 'spooled_jobs', { organization_id: server.organizationId, queue: 'tenant-only-a', status: 'pending' }), 1);
    assert.ok(!own.text.includes(other.organizationId) && !own.text.includes('other-org-queue'), 'another organization leaks into a tenant scrape');
    assert.match(own.text, /^process_cpu_user_seconds_total /m);
    assert.doesNotMatch(own.text, /^spooled_workers\{/m, "cluster-wide series are the operator's");
    const limited = await server.request('POST', '/api/v1/api-keys', { body: { name: 'metrics limited', queues: ['tenant-only-a'] } });
    const narrow = await scrape(server, limited.body.key);
    assert.equal(sample(narrow.text, 'spooled_jobs', { organization_id: server.organizationId, queue: 'tenant-only-a', status: 'pending' }), 1);
    assert.ok(!narrow.text.includes('tenant-only-b'), 'a queue-scoped key sees another queue');
  });

  it('without METRICS_TOKEN generates an operator token at first start, shows it once and keeps only its hash', async () => {
    const message = announced.find((m) => m.includes('/metrics'));
    assert.ok(message, 'the token was announced');
    const token = /\b(smt_[A-Za-z0-9_-]+)/.exec(message!)![1]!;
    assert.equal((await scrape(generated, null)).status, 401);
    const ok = await scrape(generated, token);
    assert.equal(ok.status, 200);
    assert.match(ok.text, /^spooled_/m);
    const stored = await generated.spool.db.query<{ value: string }>("SELECT value FROM spool.server_settings WHERE name = 'metrics_token_sha256'");
    assert.ok(!stored.rows[0]!.value.includes(token));
  });

  it('bounds label cardinality: queues past METRICS_MAX_QUEUES share their organization\'s (other) series', async () => {
    const bounded = await startTestServer('metricsbounded', { metricsToken: OPERATOR, metricsRefreshMs: 100, metricsMaxQueues: 2 });
    try {
      for (const [queue, n] of [['bound-a', 1], ['bound-b', 2], ['bound-c', 3], ['bound-d', 4]] as const) {
        for (let i = 0; i < n; i++) await bounded.request('POST', '/api/v1/jobs', { body: { queue_name: queue, payload: {} } });
      }
      const labels = { organization_id: bounded.organizationId, status: 'pending' };
      const other = await until(async () => sample((await scrape(bounded)).text, 'spooled_jobs', { ...labels, queue: '(other)' }));
      const text = (await scrape(bounded)).text;
      const named = ['bound-a', 'bound-b', 'bound-c', 'bound-d'].filter((queue) => sample(text, 'spooled_jobs', { ...labels, queue }) !== undefined);
      assert.equal(named.length, 2, `two queues keep their names: ${named.join()}`);
      const namedCount = named.reduce((sum, queue) => sum + sample(text, 'spooled_jobs', { ...labels, queue })!, 0);
      assert.equal(namedCount + other, 10, 'the other queues add up in (other)');
      assert.ok(sample(text, 'spooled_queue_oldest_pending_age_seconds', { organization_id: bounded.organizationId, queue: '(other)' }) !== undefined);
    } finally {
      await bounded.close();
    }
  });

  it('takes METRICS_TOKEN as the operator token when it is set', async () => {
    const ok = await scrape(server, OPERATOR);
    assert.equal(ok.status, 200);
    assert.match(ok.text, /^spooled_workers\{/m);
  });

});
