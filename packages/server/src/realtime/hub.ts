import { HistoryCursor, JOBS_CHANNEL, historyMaxId, historyTail, type Db, type Notifier } from '@spool/engine';
import { eventFromHistory } from './events.js';
import type { HubBatch } from './position.js';

/** Receives every batch the hub reads (all organizations); must not throw. */
export interface HubSubscriber {
  onBatch(batch: HubBatch): void;
}

export interface RealtimeHubOptions {
  /** Sleep between reads when no NOTIFY arrives. Default 150 ms. */
  pollMs?: number;
  /** Rows per read. Default 1000. */
  batchSize?: number;
  log?: (message: string, err?: unknown) => void;
}

/** How far back the first read looks for ids that were not committed yet. */
const WARM_UP_IDS = 1000;

/**
 * One reader of the job history per process, shared by every realtime
 * client (SSE and WebSocket): it reads only while someone is connected,
 * wakes on the existing `spool_jobs` NOTIFY (through the process's single
 * LISTEN connection) and otherwise every `pollMs`, and hands each batch to
 * the subscribers in memory. Ids that commit late are tracked by a
 * HistoryCursor so that none is skipped.
 */
export class RealtimeHub {
  readonly #db: Db;
  readonly #pollMs: number;
  readonly #batchSize: number;
  readonly #log: (message: string, err?: unknown) => void;
  readonly #subscribers = new Set<HubSubscriber>();
  readonly #unlisten: () => void;
  #cursor: HistoryCursor | null = null;
  #starting: Promise<HistoryCursor> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #reading = false;
  #again = false;
  #stopped = false;
  #lastXmax = 0n;
  /** False after a failed read, until the next one succeeds. */
  healthy = true;

  constructor(db: Db, notifier: Notifier, options: RealtimeHubOptions = {}) {
    this.#db = db;
    this.#pollMs = options.pollMs ?? 150;
    this.#batchSize = options.batchSize ?? 1000;
    this.#log = options.log ?? (() => {});
    this.#unlisten = notifier.listen(JOBS_CHANNEL, () => this.#kick());
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /**
   * Registers a subscriber (it receives every later batch) and returns where
   * the hub stands: a new client starts there; a resuming one replays up to it.
   */
  async attach(subscriber: HubSubscriber): Promise<{ scannedTo: number; gaps: number[] }> {
    if (this.#stopped) throw new Error('realtime hub is stopped');
    this.#subscribers.add(subscriber);
    try {
      const cursor = this.#cursor ?? (await (this.#starting ??= this.#warmUp()));
      return { scannedTo: cursor.scannedTo, gaps: cursor.gapIds() };
    } catch (err) {
      this.detach(subscriber);
      throw err;
    }
  }

  detach(subscriber: HubSubscriber): void {
    this.#subscribers.delete(subscriber);
    if (this.#subscribers.size > 0) return;
    // Nobody listens: stop reading; the next client starts from "now".
    this.#cursor = null;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /**
   * Ids a resuming client has not received and that may still commit. Any
   * owner of such an id is older than the last read's xmax.
   */
  addGaps(ids: number[]): void {
    if (ids.length > 0) this.#cursor?.addGaps(ids, this.#lastXmax);
  }

  stop(): void {
    this.#stopped = true;
    this.#unlisten();
    this.#subscribers.clear();
    this.#cursor = null;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  async #warmUp(): Promise<HistoryCursor> {
    try {
      const max = await historyMaxId(this.#db);
      const cursor = new HistoryCursor({ scannedTo: Math.max(0, max - WARM_UP_IDS), gaps: [] });
      for (;;) {
        const read = await historyTail(this.#db, cursor.scannedTo, cursor.gapIds(), this.#batchSize);
        cursor.advance(read.events.map((e) => e.id), read.xmin, read.xmax);
        this.#lastXmax = read.xmax;
        if (read.events.length < this.#batchSize) break;
      }
      if (this.#subscribers.size > 0 && !this.#stopped) {
        this.#cursor = cursor;
        this.#schedule(this.#pollMs);
      }
      return cursor;
    } finally {
      this.#starting = null;
    }
  }

  #kick(): void {
    if (this.#cursor) void this.#read();
  }

  #schedule(delayMs: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#read();
    }, delayMs);
    this.#timer.unref();
  }

  async #read(): Promise<void> {
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = true;
    try {
      do {
        this.#again = false;
        const cursor = this.#cursor;
        if (!cursor) return;
        const before = cursor.scannedTo;
        const gapsBefore = cursor.gapIds().join(',');
        const read = await historyTail(this.#db, before, cursor.gapIds(), this.#batchSize);
        if (cursor !== this.#cursor) return;
        const fresh = new Set(cursor.advance(read.events.map((e) => e.id), read.xmin, read.xmax));
        this.#lastXmax = read.xmax;
        const events = read.events.filter((e) => fresh.has(e.id)).map(eventFromHistory);
        const gaps = cursor.gapIds();
        if (events.length > 0 || cursor.scannedTo !== before || gaps.join(',') !== gapsBefore) {
          this.#dispatch({ events, scannedTo: cursor.scannedTo, gaps });
        }
        if (read.events.filter((e) => e.id > before).length >= this.#batchSize) this.#again = true;
      } while (this.#again);
      this.healthy = true;
    } catch (err) {
      this.healthy = false;
      this.#log('realtime history read failed', err);
    } finally {
      this.#reading = false;
      if (this.#cursor) this.#schedule(this.#pollMs);
    }
  }

  #dispatch(batch: HubBatch): void {
    for (const subscriber of [...this.#subscribers]) {
      try {
        subscriber.onBatch(batch);
      } catch (err) {
        this.#log('realtime subscriber failed', err);
      }
    }
  }
}
