import { Type } from 'typebox';
import type { DeliveryRow, WebhookRow } from '@spool/engine';

const Timestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** docs/compatibility.md §3.11 OutgoingWebhook; the secret is never returned (`has_secret`: extension). */
export const WebhookSchema = Type.Object({
  id: Type.String(),
  organization_id: Type.String(),
  name: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  has_secret: Type.Boolean(),
  failure_count: Type.Integer(),
  last_triggered_at: Timestamp,
  last_status: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export function webhookToWire(row: WebhookRow): Record<string, unknown> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    name: row.name,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    has_secret: row.secret !== null,
    failure_count: row.failure_count,
    last_triggered_at: iso(row.last_triggered_at),
    last_status: row.last_status,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export const DeliverySchema = Type.Object({
  id: Type.String(),
  webhook_id: Type.Union([Type.String(), Type.Null()]),
  event: Type.String(),
  payload: Type.Unknown(),
  status: Type.String(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  response_body: Type.Union([Type.String(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  attempts: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  delivered_at: Timestamp,
  next_attempt_at: Timestamp,
});

export function deliveryToWire(row: DeliveryRow): Record<string, unknown> {
  return {
    id: row.id,
    webhook_id: row.webhook_id,
    event: row.event,
    payload: row.payload,
    status: row.status,
    status_code: row.status_code,
    response_body: row.response_body,
    error: row.error,
    attempts: row.attempts,
    created_at: row.created_at.toISOString(),
    delivered_at: iso(row.delivered_at),
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at.toISOString() : null,
  };
}
