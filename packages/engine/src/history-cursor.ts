/**
 * Reading an append-only log without losing events: the job history
 * (spool.job_history) or the event log (spool.events), one cursor per log
 * and reader, since their ids are separate sequences.
 *
 * Log ids come from an identity sequence, but transactions commit in any
 * order: a reader that has seen id 12 may see id 11 only later. So a reader
 * remembers the ids it skipped ("gaps") and re-reads them until each is
 * settled: either it appeared, or every transaction that could own it has
 * ended. The owner of a gap is older than the visible row after it, hence
 * older than the reading snapshot's xmax; once a later snapshot's xmin
 * reaches that horizon, the owner has committed (and the row was read) or
 * aborted (and the id will never appear). A gap older than `maxGapAgeMs` is
 * dropped too, so a transaction held open elsewhere (which holds xmin back)
 * cannot grow the set without bound; the writers commit within
 * milliseconds of writing their rows, so in practice nothing is lost.
 */
export interface HistoryGap {
  id: number;
  /** xid8 (decimal text) of the snapshot's xmax when the gap was seen. */
  horizon: string;
  /** Epoch ms when the gap was first seen. */
  since: number;
}

export interface HistoryCursorState {
  /** Every id up to here was read or is a gap. */
  scannedTo: number;
  gaps: HistoryGap[];
}

export interface HistoryCursorOptions {
  maxGapAgeMs?: number;
  maxGaps?: number;
}

export class HistoryCursor {
  #scannedTo: number;
  readonly #gaps = new Map<number, { horizon: bigint; since: number }>();
  readonly #maxGapAgeMs: number;
  readonly #maxGaps: number;

  constructor(state: HistoryCursorState, options: HistoryCursorOptions = {}) {
    this.#scannedTo = state.scannedTo;
    for (const gap of state.gaps) this.#gaps.set(gap.id, { horizon: BigInt(gap.horizon), since: gap.since });
    this.#maxGapAgeMs = options.maxGapAgeMs ?? 30_000;
    this.#maxGaps = options.maxGaps ?? 10_000;
  }

  get scannedTo(): number {
    return this.#scannedTo;
  }

  /** Ids to re-read with the next read, ascending. */
  gapIds(): number[] {
    return [...this.#gaps.keys()].sort((a, b) => a - b);
  }

  /** Every id up to the watermark is settled (read, or never coming). */
  get watermark(): number {
    let low = this.#scannedTo;
    for (const id of this.#gaps.keys()) low = Math.min(low, id - 1);
    return low;
  }

  /**
   * Tracks ids that may still appear (e.g. a resume token's gaps), if they
   * are below what was scanned; ids above are read anyway.
   */
  addGaps(ids: number[], horizon: bigint, now = Date.now()): void {
    for (const id of ids) {
      if (id <= this.#scannedTo && !this.#gaps.has(id)) this.#gaps.set(id, { horizon, since: now });
    }
    this.#trim();
  }

  /**
   * Applies one read: `ids` are the rows it returned (new ones above
   * scannedTo and re-read gaps), `xmin`/`xmax` its snapshot's bounds.
   * Returns the ids that are new to this cursor, ascending.
   */
  advance(ids: number[], xmin: bigint, xmax: bigint, now = Date.now()): number[] {
    const sorted = [...new Set(ids)].sort((a, b) => a - b);
    const fresh: number[] = [];
    let previous = this.#scannedTo;
    for (const id of sorted) {
      if (id <= this.#scannedTo) {
        if (this.#gaps.delete(id)) fresh.push(id);
        continue;
      }
      for (let missing = previous + 1; missing < id; missing++) this.#gaps.set(missing, { horizon: xmax, since: now });
      fresh.push(id);
      previous = id;
    }
    this.#scannedTo = previous;
    for (const [id, gap] of this.#gaps) {
      if (xmin >= gap.horizon || now - gap.since > this.#maxGapAgeMs) this.#gaps.delete(id);
    }
    this.#trim();
    return fresh;
  }

  toState(): HistoryCursorState {
    return {
      scannedTo: this.#scannedTo,
      gaps: [...this.#gaps].map(([id, gap]) => ({ id, horizon: gap.horizon.toString(), since: gap.since })),
    };
  }

  #trim(): void {
    if (this.#gaps.size <= this.#maxGaps) return;
    for (const id of this.gapIds().slice(0, this.#gaps.size - this.#maxGaps)) this.#gaps.delete(id);
  }
}
