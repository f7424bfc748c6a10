import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const GITHUB_SECRET = 'gh-secret';
const STRIPE_SECRET = 'whsec_test';
let server: TestServer;

before(async () => {
  server = await startTestServer('inhooks', { githubWebhookSecret: GITHUB_SECRET, stripeWebhookSecret: STRIPE_SECRET });
});
after(async () => server.close());

async function jobsIn(queue: string, organizationId = server.organizationId): Promise<{ payload: unknown; idempotency_key: string | null; priority: number; max_retries: number; timeout_seconds: number; tags: unknown }[]> {
  const result = await server.spool.db.query('SELECT payload, idempotency_key, priority, max_retries, timeout_seconds, tags FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 ORDER BY created_at', [organizationId, queue]);
  return result.rows;
}

function post(path: string, rawBody: string, headers: Record<string, string>) {
  return server.request('POST', path, { rawBody, headers, auth: null });
}

// A push event body as GitHub sends it (fixture), signed the way GitHub signs.
const GITHUB_PUSH = JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: 'octo/repo' }, commits: [{ id: 'abc', message: 'Fix' }] });
const githubSignature = (body: string, secret = GITHUB_SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('POST /api/v1/webhooks/{org}/github', () => {
  it('enqueues a job on github-<event> for a valid signature', async () => {
    const response = await post(`/api/v1/webhooks/${server.organizationId}/github`, GITHUB_PUSH, {
      'x-github-event': 'push', 'x-github-delivery': 'd-1', 'x-hub-signature-256': githubSignature(GITHUB_PUSH),
    });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.text, '');
    const [job] = await jobsIn('github-push');
    assert.deepEqual(job!.payload, JSON.parse(GITHUB_PUSH));
    assert.deepEqual([job!.priority, job!.max_retries, job!.timeout_seconds], [0, 3, 300]);
  });

  it('refuses a tampered body, a wrong secret and a missing signature with 401 and enqueues nothing', async () => {
    const tampered = GITHUB_PUSH.replace('Fix', 'Pwn');
    const attempts: Record<string, string>[] = [
      { 'x-github-event': 'issues', 'x-hub-signature-256': githubSignature(GITHUB_PUSH) },
      { 'x-github-event': 'issues', 'x-hub-signature-256': githubSignature(tampered, 'other') },
      { 'x-github-event': 'issues' },
    ];
    for (const headers of attempts) {
      const response = await post(`/api/v1/webhooks/${server.organizationId}/github`, tampered, headers);
      assert.equal(response.status, 401);
    }
    assert.deepEqual(await jobsIn('github-issues'), []);
  });

  it('answers an unknown organization with 404', async () => {
    assert.equal((await post('/api/v1/webhooks/00000000-0000-4000-8000-000000000000/github', GITHUB_PUSH, { 'x-hub-signature-256': githubSignature(GITHUB_PUSH) })).status, 404);
    assert.equal((await post('/api/v1/webhooks/not-an-org/custom', '{}', {})).status, 404);
  });
});

// A Stripe event (fixture) and the Stripe-Signature scheme: t=<unix>,v1=HMAC(secret, "<t>.<body>").
const STRIPE_EVENT = JSON.stringify({ id: 'evt_1', type: 'payment_intent.succeeded', created: 1700000000, data: { object: { id: 'pi_1', amount: 2000, currency: 'usd' } } });
const stripeSignature = (body: string, t = Math.floor(Date.now() / 1000), secret = STRIPE_SECRET) => `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;

describe('POST /api/v1/webhooks/{org}/stripe', () => {
  it('enqueues data.object on stripe-<type> with the event id as idempotency key', async () => {
    const path = `/api/v1/webhooks/${server.organizationId}/stripe`;
    assert.equal((await post(path, STRIPE_EVENT, { 'stripe-signature': stripeSignature(STRIPE_EVENT) })).status, 200);
    assert.equal((await post(path, STRIPE_EVENT, { 'stripe-signature': stripeSignature(STRIPE_EVENT) })).status, 200);
    const jobs = await jobsIn('stripe-payment_intent-succeeded');
    assert.equal(jobs.length, 1, 'a redelivered event is one job');
    assert.deepEqual(jobs[0]!.payload, { id: 'pi_1', amount: 2000, currency: 'usd' });
    assert.equal(jobs[0]!.idempotency_key, 'evt_1');
  });

  it('refuses tampered bodies and stale timestamps with 401', async () => {
    const path = `/api/v1/webhooks/${server.organizationId}/stripe`;
    const other = STRIPE_EVENT.replace('evt_1', 'evt_2').replace('payment_intent.succeeded', 'charge.refunded');
    assert.equal((await post(path, other, { 'stripe-signature': stripeSignature(STRIPE_EVENT) })).status, 401);
    assert.equal((await post(path, other, { 'stripe-signature': stripeSignature(other, Math.floor(Date.now() / 1000) - 301) })).status, 401);
    assert.equal((await post(path, other, { 'stripe-signature': stripeSignature(other, undefined, 'whsec_wrong') })).status, 401);
    assert.equal((await post(path, other, {})).status, 401);
    assert.deepEqual(await jobsIn('stripe-charge-refunded'), []);
  });
});

describe('POST /api/v1/webhooks/{org}/custom', () => {
  it("requires the organization's webhook token when it has one", async () => {
    const org = await server.createOrganization();
    await server.spool.db.query(`UPDATE spool.organizations SET settings = settings || '{"webhook_token":"whk_secret"}' WHERE id = $1`, [org.organizationId]);
    const path = `/api/v1/webhooks/${org.organizationId}/custom`;
    const body = JSON.stringify({ queue_name: 'ingest', event_type: 'order.created', payload: { Order: 7 }, priority: 5 });
    assert.equal((await post(path, body, { 'x-webhook-token': 'whk_wrong' })).status, 401);
    assert.equal((await post(path, body, {})).status, 401);
    assert.deepEqual(await jobsIn('ingest', org.organizationId), []);
    const ok = await post(path, body, { 'x-webhook-token': 'whk_secret', authorization: 'Bearer ignored' });
    assert.equal(ok.status, 200, ok.text);
    const [job] = await jobsIn('ingest', org.organizationId);
    assert.deepEqual(job!.payload, { Order: 7 });
    assert.equal(job!.priority, 5);
    assert.deepEqual(job!.tags, { webhook_source: 'custom', event_type: 'order.created' });
  });

  it('validates the body with 400s naming the field', async () => {
    const path = `/api/v1/webhooks/${server.organizationId}/custom`;
    for (const [body, field] of [
      [{ queue_name: '.hidden', payload: 1 }, /queue_name/],
      [{ queue_name: 'a..b', payload: 1 }, /queue_name/],
      [{ queue_name: 'admin', payload: 1 }, /queue_name/],
      [{ queue_name: 'q' }, /payload/],
      [{ queue_name: 'q', payload: 1, priority: 101 }, /priority/],
    ] as const) {
      const response = await post(path, JSON.stringify(body), {});
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.match(response.body.message, field);
    }
    assert.equal((await post(path, 'not json', {})).status, 400);
  });

  it('answers 500 when a provider secret is not configured', async () => {
    const bare = await startTestServer('inhooksbare');
    try {
      const response = await bare.request('POST', `/api/v1/webhooks/${bare.organizationId}/github`, { rawBody: '{}', auth: null });
      assert.equal(response.status, 500);
      assert.match(response.body.message, /GITHUB_WEBHOOK_SECRET/);
    } finally {
      await bare.close();
    }
  });
});
