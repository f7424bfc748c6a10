import {
  EVENTS_CHANNEL,
  HISTORY_EVENTS_PER_ROW,
  JOBS_CHANNEL,
  eventMaxId,
  eventReplay,
  eventTail,
  historyMaxId,
  historyReplay,
  historyRowIds,
  historyTail,
  type Queryable,
} from '@spool/engine';
import { eventFromHistory, eventFromLog, type LogName, type RealtimeEvent } from './events.js';

export interface LogRead {
  events: RealtimeEvent[];
  /** Bounds of the reading snapshot, which settle gaps (history-cursor.ts). */
  xmin: bigint;
  xmax: bigint;
}

export interface LogReplayFilter {
  organizationId: string;
  after: number;
  upTo: number;
  ids: number[];
  /** Narrow a replay (the live filter is the stream's business); a log may return a superset. */
  jobId?: string | null;
  queueName?: string | null;
  limit: number;
}

/**
 * One log realtime follows: an append-only table with identity ids whose
 * writers commit in any order, read the same way (HistoryCursor) whatever
 * the table.
 */
export interface LogSource {
  name: LogName;
  /** Event ids per row: a row r holds the events r × this … r × this + this − 1. */
  eventsPerRow: number;
  /** The NOTIFY channel its writers announce new rows on. */
  channel: string;
  maxId(db: Queryable): Promise<number>;
  /** The ids of the rows after `after` (at most `limit`) with the snapshot bounds: where a reader starts. */
  rowIds(db: Queryable, after: number, limit: number): Promise<{ ids: number[]; xmin: bigint; xmax: bigint }>;
  /** The events of the rows after `after` (at most `limit` rows) and of the re-read gap rows, with the snapshot bounds. */
  tail(db: Queryable, after: number, gapIds: number[], limit: number): Promise<LogRead>;
  /** One organization's events with ids in (after, upTo] (event ids) plus those of the rows `ids`, oldest first. */
  replay(db: Queryable, filter: LogReplayFilter): Promise<RealtimeEvent[]>;
}

const history: LogSource = {
  name: 'history',
  eventsPerRow: HISTORY_EVENTS_PER_ROW,
  channel: JOBS_CHANNEL,
  maxId: historyMaxId,
  rowIds: historyRowIds,
  async tail(db, after, gapIds, limit) {
    const read = await historyTail(db, after, gapIds, limit);
    return { events: read.events.map(eventFromHistory), xmin: read.xmin, xmax: read.xmax };
  },
  async replay(db, filter) {
    return (await historyReplay(db, filter)).map(eventFromHistory);
  },
};

const events: LogSource = {
  name: 'events',
  eventsPerRow: 1,
  channel: EVENTS_CHANNEL,
  maxId: eventMaxId,
  async rowIds(db, after, limit) {
    const read = await eventTail(db, after, [], limit);
    return { ids: read.events.map((e) => e.id), xmin: read.xmin, xmax: read.xmax };
  },
  async tail(db, after, gapIds, limit) {
    const read = await eventTail(db, after, gapIds, limit);
    return { events: read.events.map(eventFromLog), xmin: read.xmin, xmax: read.xmax };
  },
  async replay(db, filter) {
    // A job's stream shows its status changes only: nothing here is one.
    if (filter.jobId) return [];
    return (await eventReplay(db, { ...filter, queueName: filter.queueName ?? null })).map(eventFromLog);
  },
};

/** Every log, in the order a resume replays them. */
export const LOG_SOURCES: readonly LogSource[] = [history, events];

/** The events per row of a log (its source's `eventsPerRow`). */
export function eventsPerRow(log: LogName): number {
  return LOG_SOURCES.find((source) => source.name === log)!.eventsPerRow;
}
