import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { loadConfig, startSpool } from '@spool/server';
import { startReceiver, type ReceivedRequest, type Receiver } from '../../../test-support/receiver.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { httpWorker } from '../../../test-support/worker.js';

let server: TestServer;
const receivers: Receiver[] = [];

before(async () => {
  server = await startTestServer('outhooks');
});
after(async () => {
  for (const r of receivers) await r.close();
  await server.close();
});

async function receiver(respond?: Receiver['respond']): Promise<Receiver> {
  const r = await startReceiver(respond);
  receivers.push(r);
  return r;
}

function assertSigned(request: ReceivedRequest, secret: string): void {
  const timestamp = request.headers['x-spooled-timestamp'] as string;
  assert.match(timestamp, /^\d+$/);
  assert.ok(Math.abs(Number(timestamp) - Date.now() / 1000) < 60);
  const expected = `sha256=${createHmac('sha256', secret).update(`${timestamp}.${request.body}`).digest('hex')}`;
  assert.equal(request.headers['x-spooled-signature'], expected);
  assert.equal(request.headers['content-type'], 'application/json');
}

async function webhook(url: string, events: string[], secret: string | null = 'shh', target: TestServer = server) {
  const response = await target.request('POST', '/api/v1/outgoing-webhooks', { body: { name: 'hook', url, events, ...(secret ? { secret } : {}) } });
  assert.equal(response.status, 201, response.text);
  return response.body;
}

async function runJob(queue: string, target: TestServer = server, result: unknown = { done: true }): Promise<string> {
  const id = (await target.request('POST', '/api/v1/jobs', { body: { queue_name: queue, payload: {} } })).body.id;
  const w = httpWorker(target);
  const [job] = await w.claim(queue);
  await w.complete(job!, result);
  return id;
}

describe('outgoing webhook CRUD', () => {
  it('creates, reads, updates and deletes without ever returning the secret', async () => {
    const created = await webhook('http://localhost:9/hook', ['job.completed', 'job.failed']);
    assert.equal(created.enabled, true);
    assert.equal('secret' in created, false);
    assert.equal(created.failure_count, 0);
    assert.equal(created.last_status, null);
    const list = await server.request('GET', '/api/v1/outgoing-webhooks');
    assert.ok(list.body.some((w: { id: string }) => w.id === created.id));
    const updated = await server.request('PUT', `/api/v1/outgoing-webhooks/${created.id}`, { body: { enabled: false, events: ['job.created'] } });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.enabled, false);
    assert.deepEqual(updated.body.events, ['job.created']);
    assert.equal(updated.body.name, 'hook');
    assert.equal('secret' in updated.body, false);
    assert.equal((await server.request('DELETE', `/api/v1/outgoing-webhooks/${created.id}`)).status, 204);
    assert.equal((await server.request('GET', `/api/v1/outgoing-webhooks/${created.id}`)).status, 404);
    assert.equal((await server.request('DELETE', '/api/v1/outgoing-webhooks/nope')).status, 404);
  });

  it('refuses unknown events and malformed URLs with 400', async () => {
    const event = await server.request('POST', '/api/v1/outgoing-webhooks', { body: { name: 'x', url: 'http://localhost/x', events: ['job.exploded'] } });
    assert.equal(event.status, 400);
    assert.match(event.body.message, /job\.exploded/);
    const url = await server.request('POST', '/api/v1/outgoing-webhooks', { body: { name: 'x', url: 'ftp://example.com/x', events: ['job.created'] } });
    assert.equal(url.status, 400);
    assert.match(url.body.message, /Invalid webhook URL/);
    const none = await server.request('POST', '/api/v1/outgoing-webhooks', { body: { name: 'x', url: 'http://localhost/x', events: [] } });
    assert.equal(none.status, 400);
  });
});

describe('delivery', () => {
  it('test delivers synchronously with a valid signature, even when disabled', async () => {
    const r = await receiver();
    const hook = await webhook(`${r.url}/test`, ['job.created']);
    await server.request('PUT', `/api/v1/outgoing-webhooks/${hook.id}`, { body: { enabled: false } });
    const response = await server.request('POST', `/api/v1/outgoing-webhooks/${hook.id}/test`, { rawBody: '' });
    assert.equal(response.status, 200);
    assert.equal(response.body.success, true);
    assert.equal(response.body.status_code, 200);
    assert.equal(typeof response.body.response_time_ms, 'number');
    assert.equal(r.requests.length, 1, 'delivered before the response');
    const [request] = r.requests;
    assert.equal(request!.json.event, 'webhook.test');
    assert.equal(request!.json.test, true);
    assert.equal(request!.json.webhook_id, hook.id);
    assert.equal(request!.headers['x-spooled-event'], 'webhook.test');
    assertSigned(request!, 'shh');
  });

  it('delivers subscribed job events, signed, and logs the delivery', async () => {
    const r = await receiver();
    const hook = await webhook(`${r.url}/events`, ['job.completed']);
    const jobId = await runJob('hook-events');
    const [request] = await r.waitFor(1);
    assert.equal(request!.json.event, 'job.completed');
    assert.equal(request!.json.data.job_id, jobId);
    assert.equal(request!.json.data.queue_name, 'hook-events');
    assert.deepEqual(request!.json.data.result, { done: true });
    assert.equal(request!.headers['x-spooled-delivery-attempt'], '1');
    assertSigned(request!, 'shh');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(r.requests.length, 1, 'only the subscribed event');
    const deliveries = await server.request('GET', `/api/v1/outgoing-webhooks/${hook.id}/deliveries`);
    assert.equal(deliveries.body.length, 1);
    assert.equal(deliveries.body[0].status, 'success');
    assert.equal(deliveries.body[0].attempts, 1);
    assert.equal(deliveries.body[0].status_code, 200);
    const after = await server.request('GET', `/api/v1/outgoing-webhooks/${hook.id}`);
    assert.equal(after.body.last_status, 'success');
    assert.ok(after.body.last_triggered_at);
  });

  it('retries a failing receiver with backoff: 500 three times, then 200, one success', async () => {
    const r = await receiver((_req, index) => (index < 3 ? 500 : 200));
    const hook = await webhook(`${r.url}/flaky`, ['job.created'], null);
    await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'hook-flaky', payload: {} } });
    const requests = await r.waitFor(4, 15_000);
    assert.deepEqual(requests.map((q) => q.headers['x-spooled-delivery-attempt']), ['1', '2', '3', '4']);
    const gaps = requests.slice(1).map((q, i) => q.at - requests[i]!.at);
    assert.ok(gaps[0]! >= 900 && gaps[1]! >= 1900 && gaps[2]! >= 3900, `backoff 1, 2, 4 s (got ${gaps.join(', ')} ms)`);
    assert.equal(requests[0]!.headers['x-spooled-signature'], undefined, 'no secret, no signature');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [delivery] = (await server.request('GET', `/api/v1/outgoing-webhooks/${hook.id}/deliveries`)).body;
    assert.equal(delivery.status, 'success');
    assert.equal(delivery.attempts, 4);
    const retried = await server.request('POST', `/api/v1/outgoing-webhooks/${hook.id}/retry/${delivery.id}`);
    assert.deepEqual(retried.body.success, true);
    assert.equal(r.requests.length, 5);
    assert.equal((await server.request('POST', `/api/v1/outgoing-webhooks/${hook.id}/retry/00000000-0000-4000-8000-000000000000`)).status, 404);
  });

  it('keeps a pending delivery and a completion webhook across a restart', async () => {
    let up = false;
    const r = await receiver(() => (up ? 200 : 503));
    const completion = await receiver(() => (up ? 200 : 503));
    const target = await startTestServer('outhooksrestart');
    try {
      await webhook(`${r.url}/restart`, ['job.completed'], 'k', target);
      const id = (await target.request('POST', '/api/v1/jobs', { body: { queue_name: 'restart', payload: {}, completion_webhook: `${completion.url}/done` } })).body.id;
      const w = httpWorker(target);
      const [job] = await w.claim('restart');
      await w.complete(job!, { n: 1 });
      await r.waitFor(1);
      await completion.waitFor(1);
      await target.spool.stop();
      const pending = await target.database.pool.query("SELECT count(*)::int AS n FROM spool.webhook_deliveries WHERE status = 'pending' AND attempts = 1");
      assert.equal(pending.rows[0].n, 2, 'both deliveries are waiting for their second attempt');
      up = true;
      const config = { ...loadConfig({}), databaseUrl: target.database.url, host: '127.0.0.1', port: 0, grpcPort: 0, logLevel: 'silent' };
      const again = await startSpool(config, { logger: pino({ level: 'silent' }) });
      try {
        const requests = await r.waitFor(2, 10_000);
        assert.equal(requests[1]!.json.data.job_id, id);
        assert.equal(requests[1]!.headers['x-spooled-delivery-attempt'], '2');
        assertSigned(requests[1]!, 'k');
        const done = (await completion.waitFor(2, 10_000))[1];
        assert.equal(done!.json.event, 'job.completed');
        assert.equal(done!.json.job_id, id);
        assert.deepEqual(done!.json.result, { n: 1 });
        assert.equal(done!.json.status, 'completed');
      } finally {
        await again.stop();
      }
    } finally {
      await target.close();
    }
  });
});

describe('SSRF policy', () => {
  it('refuses private and loopback targets in production, at creation and at delivery', async () => {
    const production = await startTestServer('outhooksprod', { environment: 'production' });
    const r = await receiver();
    try {
      for (const url of [`${r.url}/x`, 'http://localhost:8080/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest', 'http://[::1]/x', 'http://[::ffff:127.0.0.1]/x']) {
        const response = await production.request('POST', '/api/v1/outgoing-webhooks', { body: { name: 'x', url, events: ['job.created'] } });
        assert.equal(response.status, 400, url);
        assert.match(response.body.message, /Invalid webhook URL/, url);
      }
      // A row saved before the policy (or a DNS change) is checked again when delivering.
      await production.spool.db.query(
        "INSERT INTO spool.outgoing_webhooks (organization_id, name, url, events) VALUES ($1, 'old', $2, '{job.created}')",
        [production.organizationId, `${r.url}/old`],
      );
      await production.request('POST', '/api/v1/jobs', { body: { queue_name: 'ssrf', payload: {} } });
      let delivery: { status: string; error: string } | undefined;
      for (let i = 0; i < 50 && delivery?.status !== 'failed'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        delivery = (await production.spool.db.query('SELECT status, error FROM spool.webhook_deliveries WHERE organization_id = $1', [production.organizationId])).rows[0];
      }
      assert.equal(delivery?.status, 'failed');
      assert.match(delivery!.error, /Invalid webhook URL/);
      assert.equal(r.requests.length, 0);
    } finally {
      await production.close();
    }
  });

  it('allows loopback targets in development', async () => {
    const r = await receiver();
    await webhook(`${r.url}/dev`, ['job.created']);
  });
});
