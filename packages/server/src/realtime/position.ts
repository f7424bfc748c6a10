import type { LogName, RealtimeEvent } from './events.js';
import { eventsPerRow } from './logs.js';

/** What the hub hands every subscriber after each read of one log. */
export interface HubBatch {
  log: LogName;
  /** New events and late ones (filled gaps), ascending by id. */
  events: RealtimeEvent[];
  /** The hub has read every row of the log up to here, except `gaps`. */
  scannedTo: number;
  /** Rows not visible yet that may still appear, ascending. */
  gaps: number[];
}

const MAX_TOKEN_GAPS = 50;
const SEGMENT = '(\\d{1,18})(?:~(\\d{1,18}(?:,\\d{1,18})*))?';
/**
 * "h" and the history segment, then optionally ".e" and the event log's. A
 * token without the "h" is from a server that numbered history events by row
 * (one event per row, before migration 021): its numbers are rows.
 */
const TOKEN = new RegExp(`^(h?)${SEGMENT}(?:\\.e${SEGMENT})?$`);

/**
 * Where one realtime client stands in one log: it has been given (or did
 * not want) every event up to event id `covered` except those of the rows
 * in `missing`, which were not visible yet. A log row r holds the event ids
 * r × perRow … r × perRow + perRow − 1 (logs.ts). Encoded as "covered" or
 * "covered~r1,r2".
 */
export class LogPosition {
  covered: number;
  missing: Set<number>;
  readonly perRow: number;

  constructor(covered: number, missing: Iterable<number> = [], perRow = 1) {
    this.covered = covered;
    this.missing = new Set(missing);
    this.perRow = perRow;
  }

  /** Everything of the rows up to `scannedTo` except the rows `gaps`. */
  static atRow(scannedTo: number, gaps: Iterable<number>, perRow: number): LogPosition {
    return new LogPosition(LogPosition.#lastOf(scannedTo, perRow), gaps, perRow);
  }

  /** Null when a number is past what an event id can be (a forged or corrupted token). */
  static fromMatch(covered: string, missing: string | undefined, perRow: number, coveredIsRow = false): LogPosition | null {
    const at = coveredIsRow ? LogPosition.#lastOf(Number(covered), perRow) : Number(covered);
    if (!Number.isSafeInteger(at)) return null;
    const rows = missing ? missing.split(',').map(Number).filter((row) => row * perRow <= at) : [];
    return new LogPosition(at, rows, perRow);
  }

  static #lastOf(row: number, perRow: number): number {
    return row * perRow + perRow - 1;
  }

  token(): string {
    if (this.missing.size === 0) return String(this.covered);
    const sorted = [...this.missing].sort((a, b) => a - b);
    // Too many to list: resume from below the oldest (duplicates, never loss).
    if (sorted.length > MAX_TOKEN_GAPS) return String(sorted[0]! * this.perRow - 1);
    return `${this.covered}~${sorted.join(',')}`;
  }

  /**
   * Walks a hub batch of this log: calls `emit` for each event this client
   * has not been given yet, after the position has moved past it. A row
   * that fills a gap is emitted whole before the gap is closed, so a token
   * taken meanwhile replays the row again (duplicates, never loss).
   */
  apply(batch: Omit<HubBatch, 'log'>, emit: (event: RealtimeEvent) => void): void {
    const fills = batch.events.filter((e) => e.id <= this.covered);
    const fresh = batch.events.filter((e) => e.id > this.covered);
    const filled = new Set<number>();
    for (const event of fills) {
      if (!this.missing.has(event.row)) continue;
      filled.add(event.row);
      emit(event);
    }
    for (const row of filled) this.missing.delete(row);
    for (const event of fresh) {
      for (const gap of batch.gaps) if (gap * this.perRow > this.covered && gap < event.row) this.missing.add(gap);
      this.covered = event.id;
      emit(event);
    }
    this.finish(batch.scannedTo, batch.gaps);
  }

  /**
   * After a batch: covered moves to the end of the hub's scanned rows, and
   * the missing rows are those that may still appear: the hub's open gaps
   * (no one can have seen a row that is not visible yet) and any of ours the
   * hub has not scanned up to.
   */
  finish(scannedTo: number, gaps: number[]): void {
    this.covered = Math.max(this.covered, LogPosition.#lastOf(scannedTo, this.perRow));
    const missing = new Set<number>();
    for (const row of this.missing) if (row > scannedTo) missing.add(row);
    for (const gap of gaps) if (gap * this.perRow <= this.covered) missing.add(gap);
    this.missing = missing;
  }
}

/**
 * Where one realtime client stands in every log it reads (the job history
 * and the event log, whose ids are separate sequences). The resume token
 * (the SSE `id:`) is the history position, then `.e` and the event log
 * position: "120~118.e7". A client that reconnects with it as Last-Event-ID
 * gets exactly the events it missed, including late commits. A token
 * without the event log part (from a server before the event log) resumes
 * the job history only; the event log then starts from now.
 */
export class StreamPosition {
  readonly logs: Partial<Record<LogName, LogPosition>>;

  constructor(logs: Partial<Record<LogName, LogPosition>> = {}) {
    this.logs = logs;
  }

  /** Parses a Last-Event-ID; null when absent or unreadable. */
  static parse(token: string | undefined | null): StreamPosition | null {
    if (!token) return null;
    const match = TOKEN.exec(token.trim());
    if (!match) return null;
    const legacy = match[1] !== 'h';
    const history = LogPosition.fromMatch(match[2]!, match[3], eventsPerRow('history'), legacy);
    const events = match[4] === undefined ? undefined : LogPosition.fromMatch(match[4], match[5], eventsPerRow('events'));
    // Positions past any event id would reach the database as out-of-range numbers: an unreadable token.
    if (history === null || events === null) return null;
    return new StreamPosition(events ? { history, events } : { history });
  }

  token(): string {
    const history = `h${this.logs.history?.token() ?? '0'}`;
    return this.logs.events ? `${history}.e${this.logs.events.token()}` : history;
  }

  /** Applies a hub batch to its log's position; `token` is valid once that event is delivered. */
  apply(batch: HubBatch, emit: (event: RealtimeEvent, token: () => string) => void): void {
    const log = this.logs[batch.log];
    if (!log) return;
    log.apply(batch, (event) => emit(event, () => this.token()));
  }
}
