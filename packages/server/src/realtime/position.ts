import type { LogName, RealtimeEvent } from './events.js';

/** What the hub hands every subscriber after each read of one log. */
export interface HubBatch {
  log: LogName;
  /** New events and late ones (filled gaps), ascending by id. */
  events: RealtimeEvent[];
  /** The hub has read every id of the log up to here, except `gaps`. */
  scannedTo: number;
  /** Ids not visible yet that may still appear, ascending. */
  gaps: number[];
}

const MAX_TOKEN_GAPS = 50;
const SEGMENT = '(\\d{1,18})(?:~(\\d{1,18}(?:,\\d{1,18})*))?';
/** The history segment (bare, as before the event log existed), then optionally `.e` and the event log's. */
const TOKEN = new RegExp(`^${SEGMENT}(?:\\.e${SEGMENT})?$`);

/**
 * Where one realtime client stands in one log: it has been given (or did
 * not want) every event up to `covered` except the ids in `missing`, which
 * were not visible yet. Encoded as "covered" or "covered~g1,g2".
 */
export class LogPosition {
  covered: number;
  missing: Set<number>;

  constructor(covered: number, missing: Iterable<number> = []) {
    this.covered = covered;
    this.missing = new Set(missing);
  }

  static fromMatch(covered: string, missing: string | undefined): LogPosition {
    const at = Number(covered);
    return new LogPosition(at, missing ? missing.split(',').map(Number).filter((id) => id <= at) : []);
  }

  token(): string {
    if (this.missing.size === 0) return String(this.covered);
    const sorted = [...this.missing].sort((a, b) => a - b);
    // Too many to list: resume from below the oldest (duplicates, never loss).
    if (sorted.length > MAX_TOKEN_GAPS) return String(sorted[0]! - 1);
    return `${this.covered}~${sorted.join(',')}`;
  }

  /**
   * Walks a hub batch of this log: calls `emit` for each event this client
   * has not been given yet, after the position has moved past it.
   */
  apply(batch: Omit<HubBatch, 'log'>, emit: (event: RealtimeEvent) => void): void {
    const fills = batch.events.filter((e) => e.id <= this.covered);
    const fresh = batch.events.filter((e) => e.id > this.covered);
    for (const event of fills) {
      if (!this.missing.delete(event.id)) continue;
      emit(event);
    }
    for (const event of fresh) {
      for (const gap of batch.gaps) if (gap > this.covered && gap < event.id) this.missing.add(gap);
      this.covered = event.id;
      emit(event);
    }
    this.finish(batch.scannedTo, batch.gaps);
  }

  /**
   * After a batch: covered moves to the hub's scan point, and the missing
   * ids are those that may still appear: the hub's open gaps (no one can
   * have seen an id that is not visible yet) and any of ours the hub has
   * not scanned up to.
   */
  finish(scannedTo: number, gaps: number[]): void {
    this.covered = Math.max(this.covered, scannedTo);
    const missing = new Set<number>();
    for (const id of this.missing) if (id > scannedTo) missing.add(id);
    for (const gap of gaps) if (gap <= this.covered) missing.add(gap);
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
    const logs: Partial<Record<LogName, LogPosition>> = { history: LogPosition.fromMatch(match[1]!, match[2]) };
    if (match[3] !== undefined) logs.events = LogPosition.fromMatch(match[3], match[4]);
    return new StreamPosition(logs);
  }

  token(): string {
    const history = this.logs.history?.token() ?? '0';
    return this.logs.events ? `${history}.e${this.logs.events.token()}` : history;
  }

  /** Applies a hub batch to its log's position; `token` is valid once that event is delivered. */
  apply(batch: HubBatch, emit: (event: RealtimeEvent, token: () => string) => void): void {
    const log = this.logs[batch.log];
    if (!log) return;
    log.apply(batch, (event) => emit(event, () => this.token()));
  }
}
