import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AuthenticationError, LIMITS, NotFoundError, SpoolError, ValidationError } from '@spool/protocol';
import { isUuid, jobInsertMany, type NewJob } from '@spool/engine';
import type { AppContext } from '../app.js';
import { jsonNestedDeeperThan, tooDeepError } from '../http/json-body.js';
import { sameSecret } from '../http/same-secret.js';
import { jsonBytes } from '../wire/common.js';

const MAX_BODY_BYTES = 5 * 1024 * 1024;
const STRIPE_TOLERANCE_SECONDS = 300;
const RESERVED_QUEUES = new Set(['admin', 'system', 'internal', 'root', 'default']);

function hmacHex(secret: string, data: string | Buffer): string {
  return createHmac('sha256', secret).update(data).digest('hex');
}

/** A queue name from provider text: allowed characters only, within the queue name limit. */
function providerQueue(prefix: string, name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 100 - prefix.length - 1);
  return `${prefix}-${cleaned || 'unknown'}`;
}

function parseJson(raw: Buffer): unknown {
  const text = raw.toString('utf8');
  if (jsonNestedDeeperThan(text, LIMITS.jsonDepthMax)) throw tooDeepError();
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError('Body must be valid JSON', { field: 'body' });
  }
}

function header(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name];
  return typeof value === 'string' ? value : null;
}

/**
 * Checks shared by all providers (CONTRACT §3.12): the organization exists
 * (404), HTTPS in production (400), and the organization's webhook token in
 * X-Webhook-Token when it has one (401, constant-time).
 */
async function admit(ctx: AppContext, request: FastifyRequest<{ Params: { org_id: string } }>): Promise<string> {
  const orgId = request.params.org_id;
  const found = isUuid(orgId)
    ? await ctx.db.query<{ settings: Record<string, unknown> }>("SELECT settings FROM spool.organizations WHERE id = $1 AND plan_tier <> 'deleted'", [orgId])
    : { rows: [] };
  const org = found.rows[0];
  if (!org) throw new NotFoundError('Organization not found');
  if (ctx.config.environment === 'production' && header(request, 'x-forwarded-proto') !== 'https') {
    throw new ValidationError('Webhooks must be sent over HTTPS');
  }
  const token = org.settings?.webhook_token;
  if (typeof token === 'string' && token.length > 0) {
    const presented = header(request, 'x-webhook-token');
    if (!presented || !sameSecret(presented, token)) throw new AuthenticationError('Invalid webhook token');
  }
  return orgId;
}

function secretOrFail(secret: string | null, name: string): string {
  if (!secret) throw new SpoolError('INTERNAL_ERROR', 500, `${name} is not configured on this server`);
  return secret;
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

function customJob(orgId: string, body: unknown): NewJob {
  const input = body as { queue_name?: unknown; event_type?: unknown; payload?: unknown; idempotency_key?: unknown; priority?: unknown };
  if (!input || typeof input !== 'object') throw new ValidationError('Body must be a JSON object', { field: 'body' });
  const queue = input.queue_name;
  if (typeof queue !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(queue) || queue.length > 255) {
    throw new ValidationError('queue_name must be 1-255 letters, digits, "_", "." or "-", not starting with "." or "-"', { field: 'queue_name' });
  }
  if (queue.includes('..') || RESERVED_QUEUES.has(queue.toLowerCase())) throw new ValidationError(`queue_name "${queue}" is not allowed`, { field: 'queue_name' });
  if (queue.length > 100) throw new ValidationError('queue_name must be at most 100 characters', { field: 'queue_name' });
  if (input.payload === undefined) throw new ValidationError('payload is required', { field: 'payload' });
  if (jsonBytes(input.payload) > 1024 * 1024) throw new ValidationError('payload exceeds 1 MiB', { field: 'payload' });
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
 * CONTRACT §3.12: POST /webhooks/{org_id}/github|stripe|custom. Public
 * routes that authenticate by signature (and the organization's webhook
 * token); the raw body is kept for the signature check. Invalid → 401 and
 * nothing is enqueued; success → 200 with an empty body.
 */
export function incomingWebhookRoutes(app: FastifyInstance, ctx: AppContext): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) => done(null, body));
    const Params = Type.Object({ org_id: Type.String() });

    scope.post<{ Params: { org_id: string }; Body: Buffer }>('/webhooks/:org_id/github', {
      schema: { tags: ['webhooks'], summary: 'Ingest a GitHub webhook (X-Hub-Signature-256) as a job on github-<event>', params: Params },
    }, async (request, reply) => {
      const orgId = await admit(ctx, request);
      const secret = secretOrFail(ctx.config.githubWebhookSecret, 'GITHUB_WEBHOOK_SECRET');
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const signature = header(request, 'x-hub-signature-256');
      if (!signature || !sameSecret(signature, `sha256=${hmacHex(secret, raw)}`)) throw new AuthenticationError('Invalid GitHub signature');
      const delivery = header(request, 'x-github-delivery');
      await jobInsertMany(ctx.db, [{
        organizationId: orgId,
        queueName: providerQueue('github', header(request, 'x-github-event') ?? 'unknown'),
        payload: parseJson(raw),
        idempotencyKey: delivery ? `github:${delivery.slice(0, 200)}` : null,
      }]);
      return reply.code(200).send();
    });

    scope.post<{ Params: { org_id: string }; Body: Buffer }>('/webhooks/:org_id/stripe', {
      schema: { tags: ['webhooks'], summary: 'Ingest a Stripe event (Stripe-Signature, 300 s tolerance) as a job on stripe-<type>', params: Params },
    }, async (request, reply) => {
      const orgId = await admit(ctx, request);
      const secret = secretOrFail(ctx.config.stripeWebhookSecret, 'STRIPE_WEBHOOK_SECRET');
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      if (!verifyStripeSignature(raw, header(request, 'stripe-signature'), secret)) throw new AuthenticationError('Invalid Stripe signature');
      const event = parseJson(raw) as { id?: unknown; type?: unknown; data?: { object?: unknown } };
      if (typeof event?.type !== 'string' || typeof event.id !== 'string') throw new ValidationError('A Stripe event needs string id and type', { field: 'type' });
      await jobInsertMany(ctx.db, [{
        organizationId: orgId,
        queueName: providerQueue('stripe', event.type.replace(/\./g, '-')),
        payload: event.data?.object ?? null,
        idempotencyKey: event.id.slice(0, 255),
      }]);
      return reply.code(200).send();
    });

    scope.post<{ Params: { org_id: string }; Body: Buffer }>('/webhooks/:org_id/custom', {
      schema: {
        tags: ['webhooks'],
        summary: 'Enqueue a job from any system (X-Webhook-Token when the organization has one)',
        description: 'Body: { queue_name, payload, event_type?, idempotency_key?, priority? }',
        params: Params,
      },
    }, async (request, reply) => {
      const orgId = await admit(ctx, request);
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      await jobInsertMany(ctx.db, [customJob(orgId, parseJson(raw))]);
      return reply.code(200).send();
    });
  });
}
