import type { Db, Queryable } from '../db.js';
import { run, sqlFile, transaction, type Statement } from '../db.js';
import { HistoryCursor, type HistoryCursorState } from '../history-cursor.js';
import { isUuid } from '../ids.js';

const create = sqlFile(import.meta.url, './webhook-create.sql');
const list = sqlFile(import.meta.url, './webhook-list.sql');
const update = sqlFile(import.meta.url, './webhook-update.sql');
const remove = sqlFile(import.meta.url, './webhook-delete.sql');
const deliveries = sqlFile(import.meta.url, './webhook-deliveries-list.sql');
const insertDelivery = sqlFile(import.meta.url, './webhook-delivery-insert.sql');
const claim = sqlFile(import.meta.url, './webhook-delivery-claim.sql');
const record = sqlFile(import.meta.url, './webhook-delivery-record.sql');
const defer = sqlFile(import.meta.url, './webhook-delivery-defer.sql');
const take = sqlFile(import.meta.url, './webhook-delivery-take.sql');
const dispatch = sqlFile(import.meta.url, './webhook-dispatch.sql');
const dispatchEvents = sqlFile(import.meta.url, './webhook-dispatch-events.sql');
const consumers = sqlFile(import.meta.url, './webhook-dispatch-consumers.sql');

/** Outgoing webhook events (docs/compatibility.md §1.7). */
export const WEBHOOK_EVENTS = [
  'job.created', 'job.started', 'job.completed', 'job.failed', 'job.cancelled',
  'queue.paused', 'queue.resumed', 'worker.registered', 'worker.deregistered', 'schedule.triggered',
] as const;

export interface WebhookRow {
  id: string;
  organization_id: string;
  name: string;
  url: string;
  events: string[];
  secret: string | null;
  enabled: boolean;
  failure_count: number;
  last_triggered_at: Date | null;
  last_status: 'success' | 'failed' | null;
  created_at: Date;
  updated_at: Date;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string | null;
  event: string;
  payload: unknown;
  status: 'pending' | 'success' | 'failed';
  status_code: number | null;
  response_body: string | null;
  error: string | null;
  attempts: number;
  created_at: Date;
  delivered_at: Date | null;
  next_attempt_at: Date;
}

/** A delivery claimed for one attempt. */
export interface ClaimedDelivery {
  id: string;
  organization_id: string;
  webhook_id: string | null;
  job_id: string | null;
  event: string;
  payload: unknown;
  /** This attempt's number, from 1. */
  attempts: number;
  max_attempts: number;
  target_url: string;
  secret: string | null;
  enabled: boolean;
}

export async function webhookCreate(db: Queryable, input: { organizationId: string; name: string; url: string; events: string[]; secret?: string | null; enabled?: boolean }): Promise<WebhookRow> {
  const rows = await run<WebhookRow>(db, create, [input.organizationId, input.name, input.url, input.events, input.secret ?? null, input.enabled ?? true]);
  return rows[0]!;
}

export async function webhookList(db: Queryable, organizationId: string): Promise<WebhookRow[]> {
  return run<WebhookRow>(db, list, [organizationId, null]);
}

/** One webhook, or null (any id string is accepted). */
export async function webhookGet(db: Queryable, organizationId: string, id: string): Promise<WebhookRow | null> {
  if (!isUuid(id)) return null;
  return (await run<WebhookRow>(db, list, [organizationId, id]))[0] ?? null;
}

export interface WebhookPatch {
  name?: string;
  url?: string;
  events?: string[];
  /** A string sets it; null clears it; undefined keeps it. */
  secret?: string | null;
  enabled?: boolean;
}

/** Partial update; null when there is no such webhook. Re-enabling resets the failure count. */
export async function webhookUpdate(db: Queryable, organizationId: string, id: string, patch: WebhookPatch): Promise<WebhookRow | null> {
  if (!isUuid(id)) return null;
  const rows = await run<WebhookRow>(db, update, [
    organizationId, id, patch.name ?? null, patch.url ?? null, patch.events ?? null,
    patch.secret ?? null, patch.secret === null, patch.enabled ?? null,
  ]);
  return rows[0] ?? null;
}

/** True when a webhook was deleted. */
export async function webhookDelete(db: Queryable, organizationId: string, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  return (await run(db, remove, [organizationId, id])).length > 0;
}

export async function webhookDeliveries(db: Queryable, organizationId: string, webhookId: string, limit = 100): Promise<DeliveryRow[]> {
  return run<DeliveryRow>(db, deliveries, [organizationId, webhookId, null, limit]);
}

/** Logs a delivery that was made synchronously (e.g. `test`). */
export async function webhookDeliveryLog(db: Queryable, input: { organizationId: string; webhookId: string; event: string; payload: unknown; success: boolean; statusCode: number | null; responseBody: string | null; error: string | null }): Promise<string> {
  const rows = await run<{ id: string }>(db, insertDelivery, [
    input.organizationId, input.webhookId, input.event, JSON.stringify(input.payload), input.success ? 'success' : 'failed',
    input.statusCode, input.responseBody?.slice(0, 500) ?? null, input.error?.slice(0, 2000) ?? null,
  ]);
  return rows[0]!.id;
}

/** Claims due deliveries (one attempt each), across organizations; safe to run in every process. */
export async function webhookDeliveryClaim(db: Queryable, limit: number, leaseSeconds = 60): Promise<ClaimedDelivery[]> {
  return run<ClaimedDelivery>(db, claim, [limit, leaseSeconds]);
}

export interface AttemptOutcome {
  success: boolean;
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
  /** Delay before the next attempt; null makes a failure final. */
  retryInMs: number | null;
}

/** Records an attempt; returns the delivery's resulting status. */
export async function webhookDeliveryRecord(db: Queryable, id: string, outcome: AttemptOutcome): Promise<'pending' | 'success' | 'failed' | null> {
  const rows = await run<{ status: 'pending' | 'success' | 'failed' }>(db, record, [
    id, outcome.success, outcome.statusCode, outcome.responseBody, outcome.error, outcome.retryInMs === null ? null : Math.round(outcome.retryInMs),
  ]);
  return rows[0]?.status ?? null;
}

/** Returns a claimed attempt uncounted, due again at `at`. */
export async function webhookDeliveryDefer(db: Queryable, id: string, at: Date): Promise<void> {
  await run(db, defer, [id, at]);
}

/** Takes one delivery of a webhook for a manual re-send (counts an attempt); null if unknown. */
export async function webhookDeliveryTake(db: Queryable, organizationId: string, webhookId: string, deliveryId: string): Promise<{ id: string; event: string; payload: unknown; attempts: number } | null> {
  if (!isUuid(webhookId) || !isUuid(deliveryId)) return null;
  return (await run<{ id: string; event: string; payload: unknown; attempts: number }>(db, take, [organizationId, webhookId, deliveryId, 60]))[0] ?? null;
}

interface Consumers {
  subscribed: boolean;
  completion: boolean;
  history_end: number;
  events_end: number;
}

/**
 * The logs the dispatcher turns into deliveries, each with its cursor row in
 * spool.event_cursors: the job history and the event log (spool.events).
 * `consumed` says whether a row of the log can become a delivery at all;
 * `end` is the log's newest id.
 */
const DISPATCHED_LOGS: Record<string, { read: Statement; consumed: (c: Consumers) => boolean; end: (c: Consumers) => number }> = {
  webhooks: { read: dispatch, consumed: (c) => c.subscribed || c.completion, end: (c) => c.history_end },
  'webhook-events': { read: dispatchEvents, consumed: (c) => c.subscribed, end: (c) => c.events_end },
};

/**
 * Reads the next stretch of each log (job history, event log) into
 * deliveries, under its cursor row's lock (a log whose row another process
 * holds is skipped), in one transaction. Returns how many new events were
 * read (about `limit` at most) and deliveries created.
 *
 * A log nothing consumes (no enabled webhook, and for the job history no
 * job with a completion_webhook) is not read: its cursor moves to the log's
 * end and its gaps are dropped. Reading every transition of every job only
 * to find no subscriber cost a drain about a fifth of its throughput
 * (docs/performance.md). Nothing deliverable is skipped that way: a
 * completion delivery needs a job with a completion_webhook, and such a job
 * was committed before its completion's history id was even taken, so a row
 * at or below the end (or a gap below it, still uncommitted) belongs to no
 * such job if none exists in the check's snapshot. Events of a webhook are
 * those after it is created or enabled, as they are when the dispatcher is
 * behind.
 */
export async function webhookDispatch(db: Db, limit = 1000): Promise<{ read: number; created: number }> {
  return transaction(db, async (client) => {
    const locked = await client.query<{ name: string; scanned_to: number; gaps: HistoryCursorState['gaps'] }>(
      'SELECT name, scanned_to, gaps FROM spool.event_cursors WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE SKIP LOCKED',
      [Object.keys(DISPATCHED_LOGS)],
    );
    const total = { read: 0, created: 0 };
    if (locked.rows.length === 0) return total;
    const [found] = await run<Consumers>(client, consumers, []);
    for (const state of locked.rows) {
      const log = DISPATCHED_LOGS[state.name]!;
      if (!log.consumed(found!)) {
        const end = Math.max(state.scanned_to, log.end(found!));
        if (end !== state.scanned_to || state.gaps.length > 0) await saveCursor(client, state.name, { scannedTo: end, gaps: [] });
        continue;
      }
      const cursor = new HistoryCursor({ scannedTo: state.scanned_to, gaps: state.gaps });
      const before = cursor.scannedTo;
      const [row] = await run<{ ids: number[]; events?: number; snapshot_xmin: string; snapshot_xmax: string; created: number }>(client, log.read, [before, cursor.gapIds(), limit]);
      const ids = row!.ids.map(Number);
      cursor.advance(ids, BigInt(row!.snapshot_xmin), BigInt(row!.snapshot_xmax));
      const next = cursor.toState();
      if (next.scannedTo !== before || JSON.stringify(next.gaps) !== JSON.stringify(state.gaps)) await saveCursor(client, state.name, next);
      // New events read: a job history row may hold many (the read stops at about `limit` of them).
      total.read += row!.events ?? ids.filter((id) => id > before).length;
      total.created += row!.created;
    }
    return total;
  });
}

async function saveCursor(client: Queryable, name: string, state: HistoryCursorState): Promise<void> {
  await client.query('UPDATE spool.event_cursors SET scanned_to = $1, gaps = $2::jsonb, updated_at = now() WHERE name = $3', [state.scannedTo, JSON.stringify(state.gaps), name]);
}
