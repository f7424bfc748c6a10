/** Outgoing webhooks (docs/compatibility.md §3.11). */
import type { CallOptions } from '../http.js';
import type { Json } from './jobs.js';
import { Resource, seg } from './resource.js';

export type WebhookEvent =
  | 'job.created'
  | 'job.started'
  | 'job.completed'
  | 'job.failed'
  | 'job.cancelled'
  | 'queue.paused'
  | 'queue.resumed'
  | 'worker.registered'
  | 'worker.deregistered'
  | 'schedule.triggered';

export interface OutgoingWebhook {
  id: string;
  organizationId: string;
  name: string;
  url: string;
  events: WebhookEvent[];
  enabled: boolean;
  failureCount: number;
  lastTriggeredAt: string | null;
  lastStatus: 'success' | 'failed' | null;
  createdAt: string;
  updatedAt: string;
}

export interface CreateWebhookParams {
  name: string;
  url: string;
  events: WebhookEvent[];
  /** HMAC-SHA256 signing secret; never returned. */
  secret?: string;
  enabled?: boolean;
}

export type UpdateWebhookParams = Partial<CreateWebhookParams>;

export interface WebhookTestResult {
  success: boolean;
  statusCode: number | null;
  responseTimeMs: number;
  error: string | null;
}

export interface WebhookDelivery {
  id: string;
  webhookId: string;
  event: string;
  payload: Json;
  status: 'pending' | 'success' | 'failed';
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
  attempts: number;
  createdAt: string;
  deliveredAt: string | null;
}

export class WebhooksResource extends Resource {
  list(options?: CallOptions): Promise<OutgoingWebhook[]> {
    return this.call({ method: 'GET', path: '/api/v1/outgoing-webhooks' }, options);
  }

  create(params: CreateWebhookParams, options?: CallOptions): Promise<OutgoingWebhook> {
    return this.call({ method: 'POST', path: '/api/v1/outgoing-webhooks', body: params }, options);
  }

  get(id: string, options?: CallOptions): Promise<OutgoingWebhook> {
    return this.call({ method: 'GET', path: `/api/v1/outgoing-webhooks/${seg(id)}` }, options);
  }

  update(id: string, params: UpdateWebhookParams, options?: CallOptions): Promise<OutgoingWebhook> {
    return this.call({ method: 'PUT', path: `/api/v1/outgoing-webhooks/${seg(id)}`, body: params }, options);
  }

  async delete(id: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'DELETE', path: `/api/v1/outgoing-webhooks/${seg(id)}` }, options);
  }

  /** Delivers a `webhook.test` event synchronously and reports the outcome. */
  test(id: string, options?: CallOptions): Promise<WebhookTestResult> {
    return this.call({ method: 'POST', path: `/api/v1/outgoing-webhooks/${seg(id)}/test` }, options);
  }

  deliveries(id: string, options?: CallOptions): Promise<WebhookDelivery[]> {
    return this.call({ method: 'GET', path: `/api/v1/outgoing-webhooks/${seg(id)}/deliveries` }, options);
  }

  retryDelivery(id: string, deliveryId: string, options?: CallOptions): Promise<{ success: boolean; message: string }> {
    return this.call({ method: 'POST', path: `/api/v1/outgoing-webhooks/${seg(id)}/retry/${seg(deliveryId)}` }, options);
  }
}
