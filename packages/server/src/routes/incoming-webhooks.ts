import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AuthenticationError, LIMITS, ValidationError } from '@spool/protocol';
import {
  incomingDeliveryRecord,
  incomingDeliverySeen,
  organizationIngestGet,
  type IngestOrganization,
  type NewJob,
  type WebhookProvider,
} from '@spool/engine';
import type { AppContext } from '../app.js';
import { authorize } from '../authorization.js';
import type { AuthContext } from '../http/auth.js';
import { admitJobs, enqueueAdmitted } from '../http/job-admission.js';
import { assertFiniteNumbers, jsonNestedDeeperThan, tooDeepError } from '../http/json-body.js';
import { sameSecret } from '../http/same-secret.js';
import { secretBoxOf, webhookSecretOwner } from '../secret-box.js';
import { QueueName } from '../wire/common.js';
import { checkJobLimits } from './jobs.js';

const MAX_BODY_BYTES = 5 * 1024 * 1024;
const STRIPE_TOLERANCE_SECONDS = 300;
const RESERVED_QUEUES = new Set(['admin', 'system', 'internal', 'root', 'default']);
const QUEUE_NAME_PATTERN = new RegExp((QueueName as { pattern?: string }).pattern!);

/**
 * One answer for every credential failure (unknown or malformed
 * organization id, missing or wrong token, missing or wrong signature, no
 * signing secret configured), so that a caller without a credential cannot
 * tell an organization that exists from one that does not.
 */
export const INVALID_WEBHOOK_CREDENTIALS =
  'Invalid webhook credentials: check the organization id in the URL and its webhook token (X-Webhook-Token, see GET /api/v1/organizations/webhook-token) or the GitHub/Stripe signing secret set for the organization';

// Compared against when there is nothing to compare with, so that an unknown
// organization costs the same hashing as a wrong credential.
const DUMMY_SECRET = randomBytes(32).toString('base64url');

function refuse(): never {
  throw new AuthenticationError(INVALID_WEBHOOK_CREDENTIALS);
}

function hmacHex(secret: string, data: string | Buffer): string {
  return createHmac('sha256', secret).update(data).digest('hex');
}

/** A queue name from provider text: allowed characters only, within the queue name limit. */
function providerQueue(prefix: string, name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, LIMITS.queueNameMax - prefix.length - 1);
  return `${prefix}-${cleaned || 'unknown'}`;
}

function parseJson(raw: Buffer): unknown {
  const text = raw.toString('utf8');
  if (jsonNestedDeeperThan(text, LIMITS.jsonDepthMax)) throw tooDeepError();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ValidationError('Body must be valid JSON', { field: 'body' });
  }
  // 1e999999 parses to Infinity, which would be stored as null: refused as for POST /jobs.
  assertFiniteNumbers(text, parsed);
  return parsed;
}

function header(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name];
  return typeof value === 'string' ? value : null;
}

/**
 * The credential ingestion acts with: a producer of the organization on
 * every queue (its token or signing secret is an organization-level
 * credential, which only an unrestricted admin key can read or set), under its plan. Built here so that ingested jobs meet admitJobs exactly as
 * POST /jobs does.
 */
function ingestionAuth(organizationId: string, org: IngestOrganization): AuthContext {
  return {
    organizationId,
    apiKeyId: `webhook-ingestion:${organizationId}`,
    queues: ['*'],
    role: 'producer',
    rateLimit: null,
    planTier: org.planTier,
    customLimits: org.customLimits,
    via: 'api_key',
    token: null,
  };
}

/**
 * HTTPS in production (docs/compatibility.md §3.12), judged by request.protocol: it
 * reflects X-Forwarded-Proto only from proxies named in TRUST_PROXY, so a
 * client talking plain HTTP cannot simply claim HTTPS. Checked before any
 * credential, so its answer says nothing about the organization.
 */
function assertHttps(ctx: AppContext, request: FastifyRequest): void {
  if (ctx.config.environment === 'production' && request.protocol !== 'https') {
    throw new ValidationError('Webhooks must be sent over HTTPS. If Spool runs behind a TLS-terminating proxy, its operator must list that proxy in TRUST_PROXY so X-Forwarded-Proto is believed');
  }
}

/**
 * The provider's signing secret for this organization: its own, or the
 * server-wide variable while it is the only live organization and has none
 * (so that one organization's signed delivery is never accepted at another's
 * URL). Null when there is none.
 */
function providerSecret(ctx: AppContext, organizationId: string, org: IngestOrganization | null, provider: WebhookProvider): string | null {
  if (!org) return null;
  if (org.secret) {
    const opened = secretBoxOf(ctx.config).open(org.secret, webhookSecretOwner(organizationId, provider));
    if (opened.ok) return opened.value;
    ctx.logger.error({ organizationId, provider, reason: opened.reason }, 'cannot read the organization\'s webhook signing secret: incoming deliveries are refused until the secrets key is fixed or the secret is set again');
    return null;
  }
  const fallback = provider === 'github' ? ctx.config.githubWebhookSecret : ctx.config.stripeWebhookSecret;
  return fallback && org.liveOrganizations === 1 ? fallback : null;
}

/** Verifies `Stripe-Signature: t=<unix>,v1=<hex>[,v1=…]` against the raw body. */
export function verifyStripeSignature(raw: Buffer, headerValue: string | null, secret: string, now = Date.now()): boolean {
  if (!headerValue) return false;
  let timestamp: string | null = null;
  const signatures: string[] = [];
  for (const part of headerValue.split(',')) {
    const [key, value] = part.split('=', 2).map((s) => s.trim());
    if (key === 't' && value) timestamp = value;
    if (key === 'v1' && value) signatures.push(value);
  }
  if (!timestamp || !/^\d+$/.test(timestamp) || signatures.length === 0) return false;
  if (Math.abs(now / 1000 - Number(timestamp)) > STRIPE_TOLERANCE_SECONDS) return false;
  const expected = hmacHex(secret, Buffer.concat([Buffer.from(`${timestamp}.`), raw]));
  return signatures.some((signature) => sameSecret(signature, expected));
}

/** The queue-name rule of POST /jobs (docs/compatibility.md §1.8), for queue names ingestion builds or is given. */
function assertQueueName(queue: string, field: string): void {
  if (queue.length < 1 || queue.length > LIMITS.queueNameMax || !QUEUE_NAME_PATTERN.test(queue)) {
    throw new ValidationError(`${field} must be 1-${LIMITS.queueNameMax} letters, digits, "_", "." or "-", not starting with "." or "-"`, { field });
  }
}

function customJob(orgId: string, body: unknown): NewJob {
  const input = body as { queue_name?: unknown; event_type?: unknown; payload?: unknown; idempotency_key?: unknown; priority?: unknown };
  if (!input || typeof input !== 'object') throw new ValidationError('Body must be a JSON object', { field: 'body' });
  const queue = input.queue_name;
  if (typeof queue !== 'string') throw new ValidationError('queue_name is required: a string of letters, digits, "_", "." or "-"', { field: 'queue_name' });
  assertQueueName(queue, 'queue_name');
  if (queue.includes('..') || RESERVED_QUEUES.has(queue.toLowerCase())) throw new ValidationError(`queue_name "${queue}" is not allowed`, { field: 'queue_name' });
  const priority = input.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < -100 || priority > 100) throw new ValidationError('priority must be an integer from -100 to 100', { field: 'priority' });
  const key = input.idempotency_key ?? null;
  if (key !== null && (typeof key !== 'string' || key.length < 1 || key.length > 255)) throw new ValidationError('idempotency_key must be 1-255 characters', { field: 'idempotency_key' });
  const eventType = input.event_type ?? null;
  if (eventType !== null && (typeof eventType !== 'string' || eventType.length > 100)) throw new ValidationError('event_type must be at most 100 characters', { field: 'event_type' });
  return {
    organizationId: orgId,
    queueName: queue,
    payload: input.payload,
    priority,
    idempotencyKey: key,
    tags: { webhook_source: 'custom', ...(eventType ? { event_type: eventType } : {}) },
  };
}

/**
 * Enqueues an authenticated delivery the way POST /jobs enqueues: payload
 * rules, plan limits (admitJobs) and the same group-committed insert. A
 * delivery whose keys were already accepted is answered 200 and enqueues
 * nothing: providers redeliver on purpose, and a replayed capture must not
 * run twice. Keys are remembered only once the job exists, so a delivery
 * refused (e.g. by a plan limit) is taken when the provider retries it.
 */
async function enqueueDelivery(ctx: AppContext, org: IngestOrganization, job: NewJob, provider: string, replayKeys: string[], reply: FastifyReply): Promise<FastifyReply> {
  const payloadBytes = checkJobLimits({ payload: job.payload });
  assertQueueName(job.queueName, 'queue_name');
  if (await incomingDeliverySeen(ctx.db, job.organizationId, provider, replayKeys)) return reply.code(200).send();
  // The same decision as an API enqueue: ingestion acts as a producer of the organization on every queue.
  const grant = authorize(ingestionAuth(job.organizationId, org), 'job.create');
  grant.queue(job.queueName);
  const quota = await admitJobs(ctx, grant.auth, [{ queueName: job.queueName, payloadBytes }]);
  const result = await enqueueAdmitted(ctx, quota, job).catch(async (err: unknown) => {
    await quota.settle(0);
    throw err;
  });
  await quota.settle(result.created ? 1 : 0);
  await incomingDeliveryRecord(ctx.db, job.organizationId, provider, replayKeys);
  return reply.code(200).send();
}

type IngestRequest = FastifyRequest<{ Params: { org_id: string }; Body: Buffer }>;

function rawBody(request: IngestRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

/**
 * docs/compatibility.md §3.12: POST /webhooks/{org_id}/github|stripe|custom. Public
 * routes with credentials of their own: custom needs the organization's
 * webhook token (X-Webhook-Token; an organization without one has custom
 * ingestion off), GitHub and Stripe the organization's signing secret (they
 * cannot send the token). Every credential failure is the same 401; success
 * is 200 with an empty body.
 */
export function incomingWebhookRoutes(app: FastifyInstance, ctx: AppContext): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) => done(null, body));
    const Params = Type.Object({ org_id: Type.String() });

    scope.post<{ Params: { org_id: string }; Body: Buffer }>('/webhooks/:org_id/github', {
      schema: { tags: ['webhooks'], summary: "Ingest a GitHub webhook (X-Hub-Signature-256 with the organization's GitHub secret) as a job on github-<event>", params: Params },
    }, async (request, reply) => {
      assertHttps(ctx, request);
      const orgId = request.params.org_id.toLowerCase();
      const org = await organizationIngestGet(ctx.db, orgId, 'github');
      const secret = providerSecret(ctx, orgId, org, 'github');
      const raw = rawBody(request);
      const signature = header(request, 'x-hub-signature-256') ?? '';
      const valid = sameSecret(signature, `sha256=${hmacHex(secret ?? DUMMY_SECRET, raw)}`);
      if (!valid || !secret || !org) refuse();
      const delivery = header(request, 'x-github-delivery')?.slice(0, 200) ?? null;
      // GitHub signs the body but not the delivery id: the body's digest
      // catches a replay sent under a made-up delivery id.
      const replayKeys = [`body:${createHash('sha256').update(raw).digest('hex')}`, ...(delivery ? [`delivery:${delivery}`] : [])];
      return enqueueDelivery(ctx, org, {
        organizationId: orgId,
        queueName: providerQueue('github', header(request, 'x-github-event') ?? 'unknown'),
        payload: parseJson(raw),
        idempotencyKey: delivery ? `github:${delivery}` : null,
      }, 'github', replayKeys, reply);
    });

    scope.post<{ Params: { org_id: string }; Body: Buffer }>('/webhooks/:org_id/stripe', {
      schema: { tags: ['webhooks'], summary: "Ingest a Stripe event (Stripe-Signature with the organization's Stripe secret, 300 s tolerance) as a job on stripe-<type>", params: Params },
    }, async (request, reply) => {
      assertHttps(ctx, request);
      const orgId = request.params.org_id.toLowerCase();
      const org = await organizationIngestGet(ctx.db, orgId, 'stripe');
      const secret = providerSecret(ctx, orgId, org, 'stripe');
      const raw = rawBody(request);
      const valid = verifyStripeSignature(raw, header(request, 'stripe-signature'), secret ?? DUMMY_SECRET);
      if (!valid || !secret || !org) refuse();
      const event = parseJson(raw) as { id?: unknown; type?: unknown; data?: { object?: unknown } };
      if (typeof event?.type !== 'string' || typeof event.id !== 'string') throw new ValidationError('A Stripe event needs string id and type', { field: 'type' });
      const eventId = event.id.slice(0, 255);
      return enqueueDelivery(ctx, org, {
        organizationId: orgId,
        queueName: providerQueue('stripe', event.type.replace(/\./g, '-')),
        payload: event.data?.object ?? null,
        idempotencyKey: eventId,
      }, 'stripe', [`event:${eventId}`], reply);
    });

    scope.post<{ Params: { org_id: string }; Body: Buffer }>('/webhooks/:org_id/custom', {
      schema: {
        tags: ['webhooks'],
        summary: "Enqueue a job from any system (X-Webhook-Token: the organization's webhook token, always required)",
        description: 'Body: { queue_name, payload, event_type?, idempotency_key?, priority? }. An organization without a webhook token has custom ingestion off.',
        params: Params,
      },
    }, async (request, reply) => {
      assertHttps(ctx, request);
      const orgId = request.params.org_id.toLowerCase();
      const org = await organizationIngestGet(ctx.db, orgId, null);
      const token = org?.webhookToken || null;
      const presented = header(request, 'x-webhook-token') ?? '';
      const valid = sameSecret(presented, token ?? DUMMY_SECRET);
      if (!valid || !token || !org) refuse();
      const job = customJob(orgId, parseJson(rawBody(request)));
      return enqueueDelivery(ctx, org, job, 'custom', [], reply);
    });
  });
}
