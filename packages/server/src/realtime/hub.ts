import { HistoryCursor, type Db, type Notifier } from '@spool/engine';
import type { LogName, RealtimeEvent } from './events.js';
import { LOG_SOURCES, type LogSource } from './logs.js';
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

/** Where the hub stands in one log (row ids): a new client starts there; a resuming one replays up to it. */
export interface LogPoint {
  scannedTo: number;
  gaps: number[];
}

/** How far back the first read looks for ids that were not committed yet. */
const WARM_UP_IDS = 1000;

/**
 * The reader of one log for the hub: it reads only while the hub has
 * subscribers, when its writers' NOTIFY arrives or every `pollMs`, and
 * tracks ids that commit late with a HistoryCursor so that none is skipped.
 */
class LogTail {
  readonly source: LogSource;
  readonly #db: Db;
  readonly #pollMs: number;
  readonly #batchSize: number;
  readonly #log: (message: string, err?: unknown) => void;
  readonly #active: () => boolean;
  readonly #dispatch: (batch: HubBatch) => void;
  #cursor: HistoryCursor | null = null;
  #starting: Promise<HistoryCursor> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #reading = false;
  #again = false;
  #lastXmax = 0n;
  /** False after a failed read, until the next one succeeds. */
  healthy = true;

  constructor(source: LogSource, db: Db, options: Required<Omit<RealtimeHubOptions, 'log'>> & { log: RealtimeHubOptions['log'] }, active: () => boolean, dispatch: (batch: HubBatch) => void) {
    this.source = source;
    this.#db = db;
    this.#pollMs = options.pollMs;
    this.#batchSize = options.batchSize;
    this.#log = options.log ?? (() => {});
    this.#active = active;
    this.#dispatch = dispatch;
  }

  async point(): Promise<LogPoint> {
    const cursor = this.#cursor ?? (await (this.#starting ??= this.#warmUp()));
    return { scannedTo: cursor.scannedTo, gaps: cursor.gapIds() };
  }

  /** Nobody listens: stop reading; the next client starts from "now". */
  reset(): void {
    this.#cursor = null;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Rows a resuming client has not received and that may still commit: their owners are older than the last read's xmax. */
  addGaps(ids: number[]): void {
    if (ids.length > 0) this.#cursor?.addGaps(ids, this.#lastXmax);
  }

  kick(): void {
    if (this.#cursor) void this.#read();
  }

  /**
   * Whether a read stopped at its limit (more may follow at once): a log
   * source returns at most `limit` rows, and of rows holding many events
   * (the job history's routine rows) only about `limit` events.
   */
  static #full(events: RealtimeEvent[], after: number, limit: number): boolean {
    const fresh = events.filter((e) => e.row > after);
    return fresh.length >= limit || new Set(fresh.map((e) => e.row)).size >= limit;
  }

  async #warmUp(): Promise<HistoryCursor> {
    try {
      const max = await this.source.maxId(this.#db);
      const cursor = new HistoryCursor({ scannedTo: Math.max(0, max - WARM_UP_IDS), gaps: [] });
      // Only where the log stands (rows and gaps), not its events: nobody was listening.
      for (;;) {
        const read = await this.source.rowIds(this.#db, cursor.scannedTo, this.#batchSize);
        cursor.advance(read.ids, read.xmin, read.xmax);
        this.#lastXmax = read.xmax;
        if (read.ids.length < this.#batchSize) break;
      }
      if (this.#active()) {
        this.#cursor = cursor;
        this.#schedule(this.#pollMs);
      }
      return cursor;
    } finally {
      this.#starting = null;
    }
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
        const read = await this.source.tail(this.#db, before, cursor.gapIds(), this.#batchSize);
        if (cursor !== this.#cursor) return;
        const fresh = new Set(cursor.advance(read.events.map((e) => e.row), read.xmin, read.xmax));
        this.#lastXmax = read.xmax;
        const events = read.events.filter((e) => fresh.has(e.row));
        const gaps = cursor.gapIds();
        if (events.length > 0 || cursor.scannedTo !== before || gaps.join(',') !== gapsBefore) {
          this.#dispatch({ log: this.source.name, events, scannedTo: cursor.scannedTo, gaps });
        }
        if (LogTail.#full(read.events, before, this.#batchSize)) this.#again = true;
      } while (this.#again);
      this.healthy = true;
    } catch (err) {
      this.healthy = false;
      this.#log(`realtime ${this.source.name} read failed`, err);
    } finally {
      this.#reading = false;
      if (this.#cursor) this.#schedule(this.#pollMs);
    }
  }
}

/**
 * One reader per log (job history, event log) per process, shared by every
 * realtime client (SSE and WebSocket): it reads only while someone is
 * connected, wakes on the writers' NOTIFY (`spool_jobs`, `spool_events`,
 * through the process's single LISTEN connection) and otherwise every
 * `pollMs`, and hands each batch to the subscribers in memory.
 */
export class RealtimeHub {
  readonly #subscribers = new Set<HubSubscriber>();
  readonly #tails: LogTail[];
  readonly #unlisten: (() => void)[];
  readonly #log: (message: string, err?: unknown) => void;
  #stopped = false;

  constructor(db: Db, notifier: Notifier, options: RealtimeHubOptions = {}) {
    this.#log = options.log ?? (() => {});
    const settings = { pollMs: options.pollMs ?? 150, batchSize: options.batchSize ?? 1000, log: options.log };
    this.#tails = LOG_SOURCES.map((source) => new LogTail(source, db, settings, () => this.#subscribers.size > 0 && !this.#stopped, (batch) => this.#dispatch(batch)));
    this.#unlisten = this.#tails.map((tail) => notifier.listen(tail.source.channel, () => tail.kick()));
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** False while reading some log fails. */
  get healthy(): boolean {
    return this.#tails.every((tail) => tail.healthy);
  }

  /**
   * Registers a subscriber (it receives every later batch) and returns where
   * the hub stands in each log.
   */
  async attach(subscriber: HubSubscriber): Promise<Record<LogName, LogPoint>> {
    if (this.#stopped) throw new Error('realtime hub is stopped');
    this.#subscribers.add(subscriber);
    try {
      const points = await Promise.all(this.#tails.map(async (tail) => [tail.source.name, await tail.point()] as const));
      return Object.fromEntries(points) as Record<LogName, LogPoint>;
    } catch (err) {
      this.detach(subscriber);
      throw err;
    }
  }

  detach(subscriber: HubSubscriber): void {
    this.#subscribers.delete(subscriber);
    if (this.#subscribers.size > 0) return;
    for (const tail of this.#tails) tail.reset();
  }

  /** Rows of `log` a resuming client has not received and that may still commit. */
  addGaps(log: LogName, ids: number[]): void {
    this.#tails.find((tail) => tail.source.name === log)?.addGaps(ids);
  }

  stop(): void {
    this.#stopped = true;
    for (const unlisten of this.#unlisten) unlisten();
    this.#subscribers.clear();
    for (const tail of this.#tails) tail.reset();
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
