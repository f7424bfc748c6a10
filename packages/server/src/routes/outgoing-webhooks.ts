import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { NotFoundError, ValidationError } from '@spool/protocol';
import {
  WEBHOOK_EVENTS,
  webhookCreate,
  webhookDelete,
  webhookDeliveries,
  webhookDeliveryLog,
  webhookDeliveryRecord,
  webhookDeliveryTake,
  webhookGet,
  webhookList,
  webhookUpdate,
  type WebhookRow,
  type Queryable,
} from '@spool/engine';
import type { AppContext } from '../app.js';
import { authOf } from '../http/auth.js';
import { withinPlanLimit } from '../http/plan-limits.js';
import { IdParams } from '../wire/common.js';
import { DeliverySchema, WebhookSchema, deliveryToWire, webhookToWire } from '../wire/webhook.js';
import { sendWebhook } from '../webhooks/sender.js';
import { assertWebhookTarget, webhookPolicy } from '../webhooks/ssrf.js';

const Events = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 20 });
const WebhookBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  url: Type.String({ minLength: 1, maxLength: 4096 }),
  events: Events,
  secret: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
  enabled: Type.Optional(Type.Boolean()),
});
const WebhookPatchBody = Type.Partial(WebhookBody);

interface WebhookBody {
  name: string;
  url: string;
  events: string[];
  secret?: string | null;
  enabled?: boolean;
}

const TestResult = Type.Object({
  success: Type.Boolean(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  response_time_ms: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
});

function checkEvents(events: string[]): string[] {
  const unknown = events.find((event) => !(WEBHOOK_EVENTS as readonly string[]).includes(event));
  if (unknown !== undefined) throw new ValidationError(`events contains unknown event "${unknown}"; allowed: ${WEBHOOK_EVENTS.join(', ')}`, { field: 'events' });
  return [...new Set(events)];
}

async function load(ctx: AppContext, organizationId: string, id: string): Promise<WebhookRow> {
  const webhook = await webhookGet(ctx.db, organizationId, id);
  if (!webhook) throw new NotFoundError('Webhook not found');
  return webhook;
}

/** docs/compatibility.md §3.11: outgoing webhooks. Delivery itself is webhooks/delivery-service.ts. */
export function outgoingWebhookRoutes(app: FastifyInstance, ctx: AppContext): void {
  const policy = webhookPolicy(ctx.config);

  app.post<{ Body: WebhookBody }>('/outgoing-webhooks', {
    config: { operation: 'webhook.manage' },
    schema: { tags: ['webhooks'], summary: 'Register an outgoing webhook', body: WebhookBody, response: { 201: WebhookSchema } },
  }, async (request, reply) => {
    const body = request.body;
    const events = checkEvents(body.events);
    await assertWebhookTarget(body.url, policy);
    const auth = authOf(request);
    // Only enabled webhooks count against max_webhooks; a disabled one is checked when it is enabled.
    const create = (db: Queryable) => webhookCreate(db, { organizationId: auth.organizationId, name: body.name, url: body.url, events, secret: body.secret || null, enabled: body.enabled });
    const row = body.enabled === false ? await create(ctx.db) : await withinPlanLimit(ctx, auth, 'webhooks', create);
    return reply.code(201).send(webhookToWire(row));
  });

  app.get('/outgoing-webhooks', {
    config: { operation: 'webhook.read' },
    schema: { tags: ['webhooks'], summary: 'List outgoing webhooks, newest first', response: { 200: Type.Array(WebhookSchema) } },
  }, async (request) => (await webhookList(ctx.db, authOf(request).organizationId)).map(webhookToWire));

  app.get<{ Params: { id: string } }>('/outgoing-webhooks/:id', {
    config: { operation: 'webhook.read' },
    schema: { tags: ['webhooks'], summary: 'Get an outgoing webhook', params: IdParams, response: { 200: WebhookSchema } },
  }, async (request) => webhookToWire(await load(ctx, authOf(request).organizationId, request.params.id)));

  app.put<{ Params: { id: string }; Body: Partial<WebhookBody> }>('/outgoing-webhooks/:id', {
    config: { operation: 'webhook.manage' },
    schema: { tags: ['webhooks'], summary: 'Update an outgoing webhook (any subset of fields)', params: IdParams, body: WebhookPatchBody, response: { 200: WebhookSchema } },
  }, async (request) => {
    const body = request.body;
    const auth = authOf(request);
    const org = auth.organizationId;
    const current = await load(ctx, org, request.params.id);
    if (body.url !== undefined) await assertWebhookTarget(body.url, policy);
    const events = body.events === undefined ? undefined : checkEvents(body.events);
    const update = (db: Queryable) => webhookUpdate(db, org, request.params.id, {
      name: body.name,
      url: body.url,
      events,
      secret: body.secret === undefined ? undefined : body.secret || null,
      enabled: body.enabled,
    });
    const row = !current.enabled && body.enabled === true ? await withinPlanLimit(ctx, auth, 'webhooks', update) : await update(ctx.db);
    if (!row) throw new NotFoundError('Webhook not found');
    return webhookToWire(row);
  });

  app.delete<{ Params: { id: string } }>('/outgoing-webhooks/:id', {
    config: { operation: 'webhook.manage' },
    schema: { tags: ['webhooks'], summary: 'Delete an outgoing webhook', params: IdParams },
  }, async (request, reply) => {
    if (!(await webhookDelete(ctx.db, authOf(request).organizationId, request.params.id))) throw new NotFoundError('Webhook not found');
    return reply.code(204).send();
  });

  app.post<{ Params: { id: string } }>('/outgoing-webhooks/:id/test', {
    config: { operation: 'webhook.manage' },
    schema: { tags: ['webhooks'], summary: 'Send a webhook.test event now and report the outcome (10 s timeout)', params: IdParams, response: { 200: TestResult } },
  }, async (request) => {
    const org = authOf(request).organizationId;
    const webhook = await load(ctx, org, request.params.id);
    const payload = {
      event: 'webhook.test',
      webhook_id: webhook.id,
      organization_id: org,
      timestamp: new Date().toISOString(),
      test: true,
      message: 'This is a test delivery from Spool',
    };
    const response = await sendWebhook({ url: webhook.url, body: JSON.stringify(payload), event: 'webhook.test', attempt: 1, secret: webhook.secret, policy });
    await webhookDeliveryLog(ctx.db, { organizationId: org, webhookId: webhook.id, event: 'webhook.test', payload, success: response.success, statusCode: response.statusCode, responseBody: response.responseBody, error: response.error });
    return { success: response.success, status_code: response.statusCode, response_time_ms: response.durationMs, error: response.error };
  });

  app.get<{ Params: { id: string } }>('/outgoing-webhooks/:id/deliveries', {
    config: { operation: 'webhook.read' },
    schema: { tags: ['webhooks'], summary: "A webhook's deliveries, newest first (at most 100)", params: IdParams, response: { 200: Type.Array(DeliverySchema) } },
  }, async (request) => {
    const org = authOf(request).organizationId;
    const webhook = await load(ctx, org, request.params.id);
    return (await webhookDeliveries(ctx.db, org, webhook.id)).map(deliveryToWire);
  });

  app.post<{ Params: { id: string; delivery_id: string } }>('/outgoing-webhooks/:id/retry/:delivery_id', {
    config: { operation: 'webhook.manage' },
    schema: {
      tags: ['webhooks'],
      summary: 'Re-send a delivery now',
      params: Type.Object({ id: Type.String(), delivery_id: Type.String() }),
      response: { 200: Type.Object({ success: Type.Boolean(), message: Type.String() }) },
    },
  }, async (request) => {
    const org = authOf(request).organizationId;
    const webhook = await load(ctx, org, request.params.id);
    const delivery = await webhookDeliveryTake(ctx.db, org, webhook.id, request.params.delivery_id);
    if (!delivery) throw new NotFoundError('Delivery not found');
    const response = await sendWebhook({ url: webhook.url, body: JSON.stringify(delivery.payload), event: delivery.event, attempt: delivery.attempts, secret: webhook.secret, deliveryId: delivery.id, policy });
    await webhookDeliveryRecord(ctx.db, delivery.id, { ...response, retryInMs: null });
    return {
      success: response.success,
      message: response.success ? `Delivered (HTTP ${response.statusCode})` : `Delivery failed: ${response.error ?? 'unknown error'}`,
    };
  });
}
