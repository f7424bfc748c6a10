import {
  databaseDoctor,
  metricsHistoryCounts,
  metricsHistoryHead,
  metricsQueueGauges,
  metricsWorkerCounts,
  type Db,
  type DoctorReading,
  type HistoryCountRow,
  type QueueGaugeRow,
} from '@spool/engine';

export interface AggregatesOptions {
  /** Time between refreshes while someone scrapes. */
  refreshMs: number;
  /** The loop stops when nobody scraped for this long (and restarts on the next scrape). */
  idleStopMs?: number;
  /** Longest job_history range folded into counters per refresh; the rest follows next time. */
  historyChunk?: number;
  log?: (message: string, err?: unknown) => void;
  now?: () => number;
}

export interface AggregateSnapshot {
  gauges: QueueGaugeRow[];
  workers: { status: string; count: number }[];
  /** What holds back vacuum, and the hot tables' dead rows (the queue doctor's database side). */
  doctor: DoctorReading;
  /** Database time of the refresh, ms since the epoch (ages are computed against it, not the local clock). */
  at: number;
  durationMs: number;
}

/**
 * The database side of /metrics: one cached snapshot refreshed on an
 * interval, only while /metrics is being scraped, so a scrape never touches
 * the database. Gauges come from partial indexes (O(unfinished jobs));
 * counters come from the job_history rows written since the previous refresh
 * (a primary-key range), handed to `onTransitions`.
 *
 * History ids are assigned at insert but become visible at commit, so a range
 * read right up to the newest id could pass over a row whose transaction has
 * not committed yet. Each refresh therefore reads only up to the head seen by
 * the previous refresh: counters lag one interval and miss nothing that
 * committed within it.
 */
export class QueueAggregates {
  readonly #db: Db;
  readonly #options: Required<Omit<AggregatesOptions, 'log' | 'now'>> & Pick<AggregatesOptions, 'log'>;
  readonly #now: () => number;
  readonly #onTransitions: (rows: HistoryCountRow[]) => void;
  #snapshot: AggregateSnapshot | null = null;
  #position: number | null = null;
  #previousHead = 0;
  #lastTouch = 0;
  #timer: NodeJS.Timeout | null = null;
  #inFlight: Promise<void> | null = null;
  #stopped = false;

  constructor(db: Db, options: AggregatesOptions, onTransitions: (rows: HistoryCountRow[]) => void) {
    this.#db = db;
    this.#options = { refreshMs: options.refreshMs, idleStopMs: options.idleStopMs ?? Math.max(120_000, options.refreshMs * 4), historyChunk: options.historyChunk ?? 1_000_000, log: options.log };
    this.#now = options.now ?? Date.now;
    this.#onTransitions = onTransitions;
  }

  get snapshot(): AggregateSnapshot | null {
    return this.#snapshot;
  }

  /**
   * Marks a scrape: starts the refresh loop if it is not running. Resolves
   * once a snapshot exists (the first scrape waits for the first refresh, at
   * most `waitMs`); later scrapes resolve at once with the cached one.
   */
  async touch(waitMs = 2_000): Promise<void> {
    this.#lastTouch = this.#now();
    if (this.#stopped) return;
    if (!this.#timer && !this.#inFlight) this.#tick();
    if (!this.#snapshot && this.#inFlight) {
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([this.#inFlight, new Promise<void>((r) => { timeout = setTimeout(r, waitMs); })]);
      clearTimeout(timeout);
    }
  }

  /** One refresh now (tests and the first scrape). */
  async refresh(): Promise<void> {
    const started = performance.now();
    const gauges = await metricsQueueGauges(this.#db);
    const workers = await metricsWorkerCounts(this.#db);
    const doctor = await databaseDoctor(this.#db);
    const clock = await this.#db.query<{ now: Date }>('SELECT now() AS now');
    const head = await metricsHistoryHead(this.#db);
    if (this.#position === null) {
      // Counters start at this process's first refresh; earlier history is not replayed.
      this.#position = head;
    } else {
      const upto = Math.min(this.#previousHead, this.#position + this.#options.historyChunk);
      if (upto > this.#position) {
        this.#onTransitions(await metricsHistoryCounts(this.#db, this.#position, upto));
        this.#position = upto;
      }
    }
    this.#previousHead = Math.max(head, this.#position);
    this.#snapshot = { gauges, workers, doctor, at: clock.rows[0]!.now.getTime(), durationMs: performance.now() - started };
  }

  #tick(): void {
    this.#timer = null;
    if (this.#stopped) return;
    if (this.#now() - this.#lastTouch > this.#options.idleStopMs) return; // nobody scrapes: let the loop end
    this.#inFlight = this.refresh()
      .catch((err) => this.#options.log?.('metrics refresh failed', err))
      .finally(() => {
        this.#inFlight = null;
        if (this.#stopped) return;
        // A slow refresh (a huge backlog) stretches the interval so metrics never take more than ~20% of a core.
        const delay = Math.max(this.#options.refreshMs, (this.#snapshot?.durationMs ?? 0) * 4);
        this.#timer = setTimeout(() => this.#tick(), delay);
        this.#timer.unref();
      });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#inFlight;
  }
}
