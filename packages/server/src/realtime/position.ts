import type { RealtimeEvent } from './events.js';

/** What the hub hands every subscriber after each read of the history. */
export interface HubBatch {
  /** New events and late ones (filled gaps), ascending by id. */
  events: RealtimeEvent[];
  /** The hub has read every id up to here, except `gaps`. */
  scannedTo: number;
  /** Ids not visible yet that may still appear, ascending. */
  gaps: number[];
}

const MAX_TOKEN_GAPS = 50;

/**
 * Where one realtime client stands in the history: it has been given (or
 * did not want) every event up to `covered` except the ids in `missing`,
 * which were not visible yet. The resume token (the SSE `id:`) encodes this
 * as "covered" or "covered~g1,g2", so a client that reconnects with
 * Last-Event-ID gets exactly the events it missed, including late commits.
 */
export class StreamPosition {
  covered: number;
  missing: Set<number>;

  constructor(covered: number, missing: Iterable<number> = []) {
    this.covered = covered;
    this.missing = new Set(missing);
  }

  /** Parses a Last-Event-ID; null when absent or unreadable. */
  static parse(token: string | undefined | null): StreamPosition | null {
    if (!token) return null;
    const match = /^(\d{1,18})(?:~(\d{1,18}(?:,\d{1,18})*))?$/.exec(token.trim());
    if (!match) return null;
    const covered = Number(match[1]);
    const missing = match[2] ? match[2].split(',').map(Number).filter((id) => id <= covered) : [];
    return new StreamPosition(covered, missing);
  }

  token(): string {
    if (this.missing.size === 0) return String(this.covered);
    const sorted = [...this.missing].sort((a, b) => a - b);
    // Too many to list: resume from below the oldest (duplicates, never loss).
    if (sorted.length > MAX_TOKEN_GAPS) return String(sorted[0]! - 1);
    return `${this.covered}~${sorted.join(',')}`;
  }

  /**
   * Walks a hub batch: calls `emit` for each event this client has not been
   * given yet, with the token that is valid once that event is delivered.
   */
  apply(batch: HubBatch, emit: (event: RealtimeEvent, token: () => string) => void): void {
    const fills = batch.events.filter((e) => e.id <= this.covered);
    const fresh = batch.events.filter((e) => e.id > this.covered);
    for (const event of fills) {
      if (!this.missing.delete(event.id)) continue;
      emit(event, () => this.token());
    }
    for (const event of fresh) {
      for (const gap of batch.gaps) if (gap > this.covered && gap < event.id) this.missing.add(gap);
      this.covered = event.id;
      emit(event, () => this.token());
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
