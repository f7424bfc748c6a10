import type { HistoryEvent, LogEvent } from '@spool/engine';
import { EVENT_NAMES, REALTIME_EVENT_NAMES, dottedName } from '@spool/protocol';

export { dottedName };

/** The wire envelope (docs/compatibility.md §4): `{ type, data }`; every `data` carries `timestamp`. */
export interface Envelope {
  type: string;
  data: Record<string, unknown>;
}

/**
 * The logs realtime reads: the job history (spool.job_history) and the
 * event log of everything else (spool.events). Their ids are separate
 * sequences, so a position names the log.
 */
export type LogName = 'history' | 'events';

/** A row of one log, as the envelopes it produces. */
export interface RealtimeEvent {
  log: LogName;
  /** The event's id in its log: its row's id × the log's events per row + its position in the row. */
  id: number;
  /** The id of the log row that holds it (what readers follow, history-cursor.ts). */
  row: number;
  organizationId: string;
  /** '' when the event concerns no job. */
  jobId: string;
  /** '' when the event concerns no queue. */
  queueName: string;
  fromStatus: string | null;
  toStatus: string | null;
  /** The event log's type (`queue.paused`, …); null for job history. */
  eventType: string | null;
  envelopes: Envelope[];
}

const WIRE_TYPES: Record<string, string> = Object.fromEntries(Object.entries(EVENT_NAMES).map(([wire, dotted]) => [dotted, wire]));

/** The wire type of a dotted name: the PascalCase one where docs/compatibility.md §4 has it, else the dotted name. */
export function wireType(dotted: string): string {
  return WIRE_TYPES[dotted] ?? dotted;
}

/**
 * Parses an `events` filter ("job.created,JobFailed" or "*"): null = all.
 * Both spellings are accepted and compared by dotted name.
 */
export function parseEventFilter(raw: string | undefined | null): Set<string> | null {
  const names = filterNames(raw);
  if (names.length === 0 || names.includes('*')) return null;
  return new Set(names.map(dottedName));
}

function filterNames(raw: string | undefined | null): string[] {
  return raw ? raw.split(',').map((name) => name.trim()).filter(Boolean) : [];
}

const KNOWN = new Set(REALTIME_EVENT_NAMES);

/** Names in a filter that no stream carries, as the client spelled them (a typo, or a webhook-only event). */
export function unknownEventNames(raw: string | undefined | null): string[] {
  return filterNames(raw).filter((name) => name !== '*' && !KNOWN.has(dottedName(name)));
}

export function envelope(type: string, data: Record<string, unknown>, at: Date = new Date()): Envelope {
  return { type, data: { ...data, timestamp: at.toISOString() } };
}

const FAILURE_EVENTS = new Set(['fail_retry', 'fail_final', 'lease_expired', 'timeout']);

/**
 * Turns one history row into events: a JobStatusChange for every status
 * change, plus JobCreated on create, `job.started` on claim,
 * `job.cancel_requested` when a running job is asked to stop, JobCompleted on
 * complete and JobFailed on any failure (including a lease that expired),
 * `job.timed_out` when the server ended an attempt at its deadline, and
 * `job.snoozed` when the worker put the job off (not a failure).
 */
export function eventFromHistory(row: HistoryEvent): RealtimeEvent {
  const at = row.created_at;
  const base = { job_id: row.job_id, queue_name: row.queue_name };
  const envelopes: Envelope[] = [];
  if (row.event === 'create') envelopes.push(envelope('JobCreated', { ...base, priority: row.priority ?? 0 }, at));
  if (row.from_status && row.to_status && row.from_status !== row.to_status) {
    envelopes.push(envelope('JobStatusChange', { ...base, old_status: row.from_status, new_status: row.to_status }, at));
  }
  if (row.event === 'claim') envelopes.push(envelope('job.started', { ...base, worker_id: row.worker_id }, at));
  // Spool extension: the job keeps running until its worker stops it; telling the worker here
  // (besides the heartbeat answer) lets the handler's signal fire within moments.
  if (row.event === 'cancel_requested') envelopes.push(envelope('job.cancel_requested', { ...base, worker_id: row.worker_id }, at));
  // Spool extension: an enforced timeout ended the attempt (the worker named may still be
  // running it: its heartbeats and completion are refused from now on).
  if (row.event === 'timeout') {
    envelopes.push(envelope('job.timed_out', {
      ...base,
      worker_id: row.worker_id,
      error: row.message ?? '',
      new_status: row.to_status,
      will_retry: row.to_status === 'pending',
    }, at));
  }
  // Spool extension: the worker handed the job back to run later (no attempt used);
  // the history row's message is the wake-up time. Ending a cancellation, it is only the status change.
  if (row.event === 'snooze' && row.to_status === 'pending') {
    envelopes.push(envelope('job.snoozed', { ...base, worker_id: row.worker_id, scheduled_at: row.message, retry_count: row.retry_count ?? 0 }, at));
  }
  if (row.event === 'complete') {
    const duration = row.started_at ? Math.max(0, at.getTime() - row.started_at.getTime()) : 0;
    envelopes.push(envelope('JobCompleted', { ...base, duration_ms: duration, result: row.result ?? null }, at));
  }
  if (FAILURE_EVENTS.has(row.event) && row.to_status !== 'cancelled') {
    envelopes.push(envelope('JobFailed', {
      ...base,
      error: row.message ?? '',
      retry_count: row.retry_count ?? 0,
      will_retry: row.to_status === 'pending',
    }, at));
  }
  return {
    log: 'history',
    id: row.id,
    row: row.log_id,
    organizationId: row.organization_id,
    jobId: row.job_id,
    queueName: row.queue_name,
    fromStatus: row.from_status,
    toStatus: row.to_status,
    eventType: null,
    envelopes,
  };
}

/**
 * Turns one row of the event log into its envelope: `WorkerRegistered` and
 * `WorkerDeregistered` by their PascalCase wire names, the others
 * (`queue.paused`, `queue.resumed`, `schedule.triggered`) by their dotted
 * names, as docs/compatibility.md §4 says.
 */
export function eventFromLog(row: LogEvent): RealtimeEvent {
  const text = (value: unknown): string => (typeof value === 'string' ? value : '');
  return {
    log: 'events',
    id: row.id,
    row: row.id,
    organizationId: row.organization_id,
    jobId: text(row.data.job_id),
    queueName: text(row.data.queue_name),
    fromStatus: null,
    toStatus: null,
    eventType: row.type,
    envelopes: [envelope(wireType(row.type), row.data, row.created_at)],
  };
}
