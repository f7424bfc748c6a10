import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const tail = sqlFile(import.meta.url, './event-tail.sql');
const replay = sqlFile(import.meta.url, './event-replay.sql');

/**
 * The events of spool.events (migration 010): everything announced that is
 * not a job transition. Each is written by the statement that makes the
 * change (queue-pause.sql, worker-register.sql, …), which also sends a NOTIFY
 * on EVENTS_CHANNEL.
 */
export const EVENT_TYPES = ['queue.paused', 'queue.resumed', 'worker.registered', 'worker.deregistered', 'schedule.triggered', 'job.progress', 'job.log'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The NOTIFY channel a new event is announced on (empty payload: "read the log"). */
export const EVENTS_CHANNEL = 'spool_events';

/** A row of spool.events. */
export interface LogEvent {
  id: number;
  organization_id: string;
  type: EventType;
  /** snake_case data as sent (docs/compatibility.md §4), without `timestamp` (that is created_at). */
  data: Record<string, unknown>;
  created_at: Date;
}

export interface EventTailResult {
  events: LogEvent[];
  xmin: bigint;
  xmax: bigint;
}

/** Events after `after` (at most `limit`) plus the gap ids, with the snapshot's bounds. */
export async function eventTail(db: Queryable, after: number, gapIds: number[], limit: number): Promise<EventTailResult> {
  const rows = await run<LogEvent & { snapshot_xmin: string; snapshot_xmax: string }>(db, tail, [after, gapIds, limit]);
  const first = rows[0]!;
  return {
    events: rows.filter((row) => row.id !== null).map(({ snapshot_xmin: _a, snapshot_xmax: _b, ...event }) => event),
    xmin: BigInt(first.snapshot_xmin),
    xmax: BigInt(first.snapshot_xmax),
  };
}

export interface EventReplayParams {
  organizationId: string;
  after: number;
  upTo: number;
  ids: number[];
  /** Only events whose data names this queue. */
  queueName?: string | null;
  limit: number;
}

/** One organization's events in (after, upTo] plus `ids`, oldest first. */
export async function eventReplay(db: Queryable, params: EventReplayParams): Promise<LogEvent[]> {
  return run<LogEvent>(db, replay, [
    params.organizationId, params.after, params.upTo, params.ids, params.queueName ?? null, params.limit,
  ]);
}

/** The highest event id (0 when empty). */
export async function eventMaxId(db: Queryable): Promise<number> {
  const result = await db.query<{ max: number | null }>('SELECT max(id) AS max FROM spool.events');
  return result.rows[0]?.max ?? 0;
}
