import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { IncomingDeliveryPruner } from '@spool/engine';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
let token: string;

const GITHUB_SECRET = 'gh-secret-of-the-first-org';
const STRIPE_SECRET = 'whsec_first_org';

before(async () => {
  server = await startTestServer('inhooks', { secretsKey: randomBytes(32) });
  token = await webhookToken(server.apiKey);
  await setSecret(server.apiKey, 'github', GITHUB_SECRET);
  await setSecret(server.apiKey, 'stripe', STRIPE_SECRET);
});
after(async () => server.close());

async function webhookToken(apiKey: string): Promise<string> {
  return (await server.request('GET', '/api/v1/organizations/webhook-token', { auth: apiKey })).body.token;
}

async function setSecret(apiKey: string, provider: string, secret: string): Promise<void> {
  const response = await server.request('PUT', `/api/v1/organizations/webhook-secrets/${provider}`, { auth: apiKey, body: { secret } });
  assert.equal(response.status, 200, response.text);
}

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

// A Stripe event (fixture) and the Stripe-Signature scheme: t=<unix>,v1=HMAC(secret, "<t>.<body>").
const STRIPE_EVENT = JSON.stringify({ id: 'evt_1', type: 'payment_intent.succeeded', created: 1700000000, data: { object: { id: 'pi_1', amount: 2000, currency: 'usd' } } });
const stripeSignature = (body: string, t = Math.floor(Date.now() / 1000), secret = STRIPE_SECRET) => `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;

const UNKNOWN_ORG = '00000000-0000-4000-8000-000000000000';

describe('POST /api/v1/webhooks/{org}/github', () => {
  it("enqueues a job on github-<event> for a valid signature with the organization's own secret", async () => {
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

  it("refuses organization A's signed delivery at organization B's URL", async () => {
    const other = await server.createOrganization();
    const body = JSON.stringify({ action: 'opened', n: randomBytes(4).toString('hex') });
    const headers = { 'x-github-event': 'pull_request', 'x-github-delivery': `cross-${randomBytes(4).toString('hex')}`, 'x-hub-signature-256': githubSignature(body) };
    // B has no GitHub secret of its own, then one of its own: A's signature fits neither.
    assert.equal((await post(`/api/v1/webhooks/${other.organizationId}/github`, body, headers)).status, 401);
    await setSecret(other.apiKey, 'github', 'gh-secret-of-b');
    assert.equal((await post(`/api/v1/webhooks/${other.organizationId}/github`, body, headers)).status, 401);
    assert.deepEqual(await jobsIn('github-pull_request', other.organizationId), []);
    const own = await post(`/api/v1/webhooks/${other.organizationId}/github`, body, { ...headers, 'x-hub-signature-256': githubSignature(body, 'gh-secret-of-b') });
    assert.equal(own.status, 200, own.text);
    assert.equal((await jobsIn('github-pull_request', other.organizationId)).length, 1);
  });

  it('answers a replayed delivery 200 and enqueues it once, also under a made-up delivery id', async () => {
    const body = JSON.stringify({ zen: 'Keep it logically awesome.', n: randomBytes(4).toString('hex') });
    const delivery = `replay-${randomBytes(4).toString('hex')}`;
    const path = `/api/v1/webhooks/${server.organizationId}/github`;
    const headers = { 'x-github-event': 'ping', 'x-github-delivery': delivery, 'x-hub-signature-256': githubSignature(body) };
    for (const attempt of [headers, headers, { ...headers, 'x-github-delivery': `${delivery}-forged` }, { ...headers, 'x-github-delivery': '' }]) {
      const response = await post(path, body, attempt);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.text, '');
    }
    assert.equal((await jobsIn('github-ping')).length, 1);
    // Another body under the delivery id already used is a replay too.
    const other = JSON.stringify({ zen: 'other', n: randomBytes(4).toString('hex') });
    assert.equal((await post(path, other, { ...headers, 'x-hub-signature-256': githubSignature(other) })).status, 200);
    assert.equal((await jobsIn('github-ping')).length, 1);
    const remembered = await server.spool.db.query('SELECT delivery_key FROM spool.incoming_webhook_deliveries WHERE organization_id = $1 AND provider = $2', [server.organizationId, 'github']);
    assert.ok(remembered.rows.some((row) => row.delivery_key === `delivery:${delivery}`));
  });

  it('forgets remembered deliveries after the pruning age, not before', async () => {
    const org = await server.createOrganization();
    await server.spool.db.query(
      `INSERT INTO spool.incoming_webhook_deliveries (organization_id, provider, delivery_key, created_at)
       VALUES ($1, 'github', 'delivery:old', now() - interval '49 hours'), ($1, 'github', 'delivery:recent', now() - interval '23 hours')`,
      [org.organizationId],
    );
    await new IncomingDeliveryPruner(server.spool.db).runOnce();
    const left = await server.spool.db.query('SELECT delivery_key FROM spool.incoming_webhook_deliveries WHERE organization_id = $1', [org.organizationId]);
    assert.deepEqual(left.rows.map((row) => row.delivery_key), ['delivery:recent']);
  });
});

describe('POST /api/v1/webhooks/{org}/stripe', () => {
  it('enqueues data.object on stripe-<type> with the event id as idempotency key; a replay is 200 and one job', async () => {
    const path = `/api/v1/webhooks/${server.organizationId}/stripe`;
    const signature = stripeSignature(STRIPE_EVENT);
    assert.equal((await post(path, STRIPE_EVENT, { 'stripe-signature': signature })).status, 200);
    assert.equal((await post(path, STRIPE_EVENT, { 'stripe-signature': signature })).status, 200);
    assert.equal((await post(path, STRIPE_EVENT, { 'stripe-signature': stripeSignature(STRIPE_EVENT, Math.floor(Date.now() / 1000) - 5) })).status, 200);
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

  it("refuses organization A's signed event at organization B's URL", async () => {
    const other = await server.createOrganization();
    const event = STRIPE_EVENT.replace('evt_1', 'evt_cross');
    assert.equal((await post(`/api/v1/webhooks/${other.organizationId}/stripe`, event, { 'stripe-signature': stripeSignature(event) })).status, 401);
    await setSecret(other.apiKey, 'stripe', 'whsec_b');
    assert.equal((await post(`/api/v1/webhooks/${other.organizationId}/stripe`, event, { 'stripe-signature': stripeSignature(event) })).status, 401);
    assert.deepEqual(await jobsIn('stripe-payment_intent-succeeded', other.organizationId), []);
    assert.equal((await post(`/api/v1/webhooks/${other.organizationId}/stripe`, event, { 'stripe-signature': stripeSignature(event, undefined, 'whsec_b') })).status, 200);
  });
});

describe('POST /api/v1/webhooks/{org}/custom', () => {
  const body = JSON.stringify({ queue_name: 'ingest', event_type: 'order.created', payload: { Order: 7 }, priority: 5 });

  it("requires the organization's webhook token, which every new organization has", async () => {
    const org = await server.createOrganization();
    const orgToken = await webhookToken(org.apiKey);
    assert.match(orgToken, /^whk_/);
    const path = `/api/v1/webhooks/${org.organizationId}/custom`;
    assert.equal((await post(path, body, { 'x-webhook-token': 'whk_wrong' })).status, 401);
    assert.equal((await post(path, body, {})).status, 401);
    assert.equal((await post(path, body, { 'x-webhook-token': token })).status, 401, "another organization's token");
    assert.deepEqual(await jobsIn('ingest', org.organizationId), []);
    const ok = await post(path, body, { 'x-webhook-token': orgToken, authorization: 'Bearer ignored' });
    assert.equal(ok.status, 200, ok.text);
    const [job] = await jobsIn('ingest', org.organizationId);
    assert.deepEqual(job!.payload, { Order: 7 });
    assert.equal(job!.priority, 5);
    assert.deepEqual(job!.tags, { webhook_source: 'custom', event_type: 'order.created' });
  });

  it('is off for an organization without a token (cleared, or created before tokens were generated) until one is generated', async () => {
    const org = await server.createOrganization();
    const old = await webhookToken(org.apiKey);
    const path = `/api/v1/webhooks/${org.organizationId}/custom`;
    assert.equal((await server.request('POST', '/api/v1/organizations/webhook-token/clear', { auth: org.apiKey })).status, 204);
    assert.equal((await post(path, body, {})).status, 401);
    assert.equal((await post(path, body, { 'x-webhook-token': old })).status, 401);
    assert.equal((await post(path, body, { 'x-webhook-token': '' })).status, 401);
    assert.deepEqual(await jobsIn('ingest', org.organizationId), []);
    const fresh = (await server.request('POST', '/api/v1/organizations/webhook-token/regenerate', { auth: org.apiKey })).body.token;
    assert.equal((await post(path, body, { 'x-webhook-token': fresh })).status, 200);
  });

  it('validates the body with 400s naming the field, once the token is right', async () => {
    const path = `/api/v1/webhooks/${server.organizationId}/custom`;
    for (const [input, field] of [
      [{ queue_name: '.hidden', payload: 1 }, /queue_name/],
      [{ queue_name: 'a..b', payload: 1 }, /queue_name/],
      [{ queue_name: 'admin', payload: 1 }, /queue_name/],
      [{ queue_name: 'x'.repeat(101), payload: 1 }, /queue_name/],
      [{ payload: 1 }, /queue_name/],
      [{ queue_name: 'q' }, /payload/],
      [{ queue_name: 'q', payload: 1, priority: 101 }, /priority/],
    ] as const) {
      const response = await post(path, JSON.stringify(input), { 'x-webhook-token': token });
      assert.equal(response.status, 400, JSON.stringify(input));
      assert.match(response.body.message, field);
    }
    assert.equal((await post(path, 'not json', { 'x-webhook-token': token })).status, 400);
    assert.equal((await post(path, 'not json', {})).status, 401, 'no body check before the credential');
  });
});

describe('one answer for every credential failure', () => {
  it('unknown and malformed organizations, wrong or missing tokens and signatures, and unset secrets answer alike', async () => {
    const bare = await server.createOrganization();
    await server.request('POST', '/api/v1/organizations/webhook-token/clear', { auth: bare.apiKey });
    const custom = JSON.stringify({ queue_name: 'q', payload: 1 });
    const attempts: [string, string, Record<string, string>][] = [
      [`/api/v1/webhooks/${UNKNOWN_ORG}/custom`, custom, { 'x-webhook-token': token }],
      ['/api/v1/webhooks/not-an-org/custom', custom, { 'x-webhook-token': token }],
      [`/api/v1/webhooks/${server.organizationId}/custom`, custom, { 'x-webhook-token': 'whk_wrong' }],
      [`/api/v1/webhooks/${server.organizationId}/custom`, custom, {}],
      [`/api/v1/webhooks/${bare.organizationId}/custom`, custom, {}],
      [`/api/v1/webhooks/${UNKNOWN_ORG}/github`, GITHUB_PUSH, { 'x-hub-signature-256': githubSignature(GITHUB_PUSH) }],
      [`/api/v1/webhooks/${server.organizationId}/github`, GITHUB_PUSH, { 'x-hub-signature-256': githubSignature(GITHUB_PUSH, 'wrong') }],
      [`/api/v1/webhooks/${bare.organizationId}/github`, GITHUB_PUSH, { 'x-hub-signature-256': githubSignature(GITHUB_PUSH) }],
      [`/api/v1/webhooks/${UNKNOWN_ORG}/stripe`, STRIPE_EVENT, { 'stripe-signature': stripeSignature(STRIPE_EVENT) }],
      [`/api/v1/webhooks/${bare.organizationId}/stripe`, STRIPE_EVENT, { 'stripe-signature': stripeSignature(STRIPE_EVENT) }],
      [`/api/v1/webhooks/${server.organizationId}/stripe`, STRIPE_EVENT, { 'stripe-signature': 't=1,v1=00' }],
    ];
    const answers = new Set<string>();
    for (const [path, raw, headers] of attempts) {
      const response = await post(path, raw, headers);
      assert.equal(response.status, 401, `${path}: ${response.text}`);
      assert.equal(response.body.code, 'AUTHENTICATION_FAILED');
      assert.match(response.body.message, /organization id.*webhook token.*signing secret/);
      answers.add(JSON.stringify(response.body));
    }
    assert.equal(answers.size, 1, [...answers].join('\n'));
  });
});

describe('plan limits apply to ingested jobs', () => {
  it('refuses custom jobs over the free plan limits with 403 LIMIT_EXCEEDED, like POST /jobs', async () => {
    const free = await server.createOrganization('free');
    const freeToken = await webhookToken(free.apiKey);
    const path = `/api/v1/webhooks/${free.organizationId}/custom`;
    for (let i = 0; i < 10; i++) {
      const response = await post(path, JSON.stringify({ queue_name: 'limited', payload: { i } }), { 'x-webhook-token': freeToken });
      assert.equal(response.status, 200, response.text);
    }
    const refused = await post(path, JSON.stringify({ queue_name: 'limited', payload: { i: 10 } }), { 'x-webhook-token': freeToken });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.code, 'LIMIT_EXCEEDED');
    assert.equal(refused.body.resource, 'active_jobs');
    assert.equal(refused.body.plan, 'free');
    assert.equal((await jobsIn('limited', free.organizationId)).length, 10);
    const viaApi = await server.request('POST', '/api/v1/jobs', { auth: free.apiKey, body: { queue_name: 'limited', payload: {} } });
    assert.equal(viaApi.status, 403);
    assert.equal(viaApi.body.resource, refused.body.resource);
  });

  it('refuses a GitHub payload over the plan size and takes the same delivery once the plan allows it', async () => {
    const free = await server.createOrganization('free');
    await setSecret(free.apiKey, 'github', 'gh-free');
    const big = JSON.stringify({ blob: 'x'.repeat(70 * 1024) });
    const headers = { 'x-github-event': 'push', 'x-github-delivery': 'big-1', 'x-hub-signature-256': githubSignature(big, 'gh-free') };
    const refused = await post(`/api/v1/webhooks/${free.organizationId}/github`, big, headers);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.resource, 'payload_size');
    assert.deepEqual(await jobsIn('github-push', free.organizationId), []);
    const upgraded = await server.request('PATCH', `/api/v1/admin/organizations/${free.organizationId}`, { auth: null, headers: { 'x-admin-key': 'test-admin-key' }, body: { plan_tier: 'pro' } });
    assert.equal(upgraded.status, 200, upgraded.text);
    // GitHub redelivers a refused delivery with the same id: a refusal was not remembered as done.
    assert.equal((await post(`/api/v1/webhooks/${free.organizationId}/github`, big, headers)).status, 200);
    assert.equal((await jobsIn('github-push', free.organizationId)).length, 1);
  });
});

describe('GET/PUT/DELETE /api/v1/organizations/webhook-secrets', () => {
  it('reports whether a secret is set, never the secret, and stores only ciphertext', async () => {
    const org = await server.createOrganization();
    const initial = await server.request('GET', '/api/v1/organizations/webhook-secrets', { auth: org.apiKey });
    assert.equal(initial.status, 200);
    assert.equal(initial.body.github.configured, false);
    assert.equal(initial.body.stripe.configured, false);
    assert.equal(initial.body.github.webhook_url, `${server.url}/api/v1/webhooks/${org.organizationId}/github`);
    const secret = `gh-${randomBytes(12).toString('hex')}`;
    const set = await server.request('PUT', '/api/v1/organizations/webhook-secrets/github', { auth: org.apiKey, body: { secret } });
    assert.equal(set.status, 200);
    assert.equal(set.body.configured, true);
    assert.ok(!set.text.includes(secret));
    const read = await server.request('GET', '/api/v1/organizations/webhook-secrets', { auth: org.apiKey });
    assert.equal(read.body.github.configured, true);
    assert.equal(read.body.stripe.configured, false);
    assert.ok(!read.text.includes(secret));
    const orgRead = await server.request('GET', `/api/v1/organizations/${org.organizationId}`, { auth: org.apiKey });
    assert.ok(!orgRead.text.includes(secret));
    const dump = await server.spool.db.query("SELECT t::text AS row FROM spool.organization_webhook_secrets t WHERE organization_id = $1", [org.organizationId]);
    assert.equal(dump.rows.length, 1);
    assert.ok(!dump.rows[0].row.includes(secret) && !dump.rows[0].row.includes(Buffer.from(secret).toString('hex')), 'no plaintext in the row');
    // Another organization does not see it.
    assert.equal((await server.request('GET', '/api/v1/organizations/webhook-secrets', { auth: server.apiKey })).body.github.webhook_url.includes(org.organizationId), false);
  });

  it('refuses an unknown provider and an empty secret; DELETE turns that provider off', async () => {
    const org = await server.createOrganization();
    assert.equal((await server.request('PUT', '/api/v1/organizations/webhook-secrets/gitlab', { auth: org.apiKey, body: { secret: 'x' } })).status, 404);
    assert.equal((await server.request('PUT', '/api/v1/organizations/webhook-secrets/github', { auth: org.apiKey, body: { secret: '' } })).status, 400);
    assert.equal((await server.request('PUT', '/api/v1/organizations/webhook-secrets/github', { auth: null, body: { secret: 'x' } })).status, 401);
    await setSecret(org.apiKey, 'github', 'gh-delete-me');
    const raw = JSON.stringify({ n: randomBytes(4).toString('hex') });
    const headers = { 'x-github-event': 'push', 'x-hub-signature-256': githubSignature(raw, 'gh-delete-me') };
    assert.equal((await post(`/api/v1/webhooks/${org.organizationId}/github`, raw, headers)).status, 200);
    assert.equal((await server.request('DELETE', '/api/v1/organizations/webhook-secrets/github', { auth: org.apiKey })).status, 204);
    assert.equal((await server.request('DELETE', '/api/v1/organizations/webhook-secrets/github', { auth: org.apiKey })).status, 204);
    const again = JSON.stringify({ n: randomBytes(4).toString('hex') });
    assert.equal((await post(`/api/v1/webhooks/${org.organizationId}/github`, again, { ...headers, 'x-hub-signature-256': githubSignature(again, 'gh-delete-me') })).status, 401);
  });

  it('refuses a key limited to some queues with 403 (a signing secret enqueues into every github-*/stripe-* queue)', async () => {
    const org = await server.createOrganization();
    const limited = await server.request('POST', '/api/v1/api-keys', { auth: org.apiKey, body: { name: 'emails only', queues: ['emails'] } });
    assert.equal(limited.status, 201, limited.text);
    for (const method of ['PUT', 'DELETE']) {
      const response = await server.request(method, '/api/v1/organizations/webhook-secrets/github', { auth: limited.body.key, body: { secret: 'from-a-limited-key' } });
      assert.equal(response.status, 403, `${method}: ${response.text}`);
      assert.match(response.body.message, /every queue/);
    }
    assert.equal((await server.request('GET', '/api/v1/organizations/webhook-secrets', { auth: org.apiKey })).body.github.configured, false);
  });

  it("does not open a secret row moved to another organization (the ciphertext is bound to its owner)", async () => {
    const a = await server.createOrganization();
    const b = await server.createOrganization();
    await setSecret(a.apiKey, 'github', 'gh-of-a');
    await server.spool.db.query(
      `INSERT INTO spool.organization_webhook_secrets (organization_id, provider, ciphertext, iv, auth_tag, key_id)
       SELECT $2, provider, ciphertext, iv, auth_tag, key_id FROM spool.organization_webhook_secrets WHERE organization_id = $1 AND provider = 'github'`,
      [a.organizationId, b.organizationId],
    );
    const raw = JSON.stringify({ n: randomBytes(4).toString('hex') });
    assert.equal((await post(`/api/v1/webhooks/${b.organizationId}/github`, raw, { 'x-github-event': 'push', 'x-hub-signature-256': githubSignature(raw, 'gh-of-a') })).status, 401);
  });
});
