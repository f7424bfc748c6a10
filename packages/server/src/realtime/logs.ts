import {
  EVENTS_CHANNEL,
  JOBS_CHANNEL,
  eventMaxId,
  eventReplay,
  eventTail,
  historyMaxId,
  historyReplay,
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
  /** The NOTIFY channel its writers announce new rows on. */
  channel: string;
  maxId(db: Queryable): Promise<number>;
  /** Rows after `after` (at most `limit`) and the re-read gap ids, with the snapshot bounds. */
  tail(db: Queryable, after: number, gapIds: number[], limit: number): Promise<LogRead>;
  /** One organization's rows in (after, upTo] plus `ids`, oldest first. */
  replay(db: Queryable, filter: LogReplayFilter): Promise<RealtimeEvent[]>;
}

const history: LogSource = {
  name: 'history',
  channel: JOBS_CHANNEL,
  maxId: historyMaxId,
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
  channel: EVENTS_CHANNEL,
  maxId: eventMaxId,
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
