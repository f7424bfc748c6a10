import type { Db } from '../db.js';
import { queueStatsRollup, queueStatsRotate } from '../ops/queue-stats-history.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface QueueStatsRollupOptions extends Partial<LoopServiceOptions> {
  /** About how many events (job transitions) are rolled up per transaction. Default 5000 (a routine row holds up to 1024). */
  batchSize?: number;
  /** How often the retention ring is checked. Default every minute. */
  rotateEveryMs?: number;
}

/**
 * Keeps the per-queue activity history (docs/history.md): rolls the new
 * job_history rows into per-minute and per-hour buckets every `idleMs`
 * (default 5 s; at once again while a batch was full), and empties the
 * partition of the retention ring whose turn comes next. Runs on the leader.
 * Readers of the 24 h figures add the rows not rolled up yet, so their
 * counts do not wait for it; durations and the timeseries' percentiles lag
 * by at most one interval.
 */
export class QueueStatsRollup extends LoopService {
  readonly name = 'queue-stats-rollup';
  readonly #db: Db;
  readonly #batchSize: number;
  readonly #rotateEveryMs: number;
  #rotatedAt = 0;

  constructor(db: Db, options: QueueStatsRollupOptions = {}) {
    super({ idleMs: options.idleMs ?? 5_000, errorDelayMs: options.errorDelayMs, startDelayMs: options.startDelayMs ?? 1_000, log: options.log });
    this.#db = db;
    this.#batchSize = options.batchSize ?? 5000;
    this.#rotateEveryMs = options.rotateEveryMs ?? 60_000;
  }

  async runOnce(): Promise<number> {
    if (Date.now() - this.#rotatedAt >= this.#rotateEveryMs) {
      this.count('partitions_emptied', (await queueStatsRotate(this.#db)).length);
      this.#rotatedAt = Date.now();
    }
    return (await this.#rollUp()) ? 0 : this.idleMs;
  }

  /** Rolls up everything committed so far (tests, and anything that wants the history current now). */
  async drain(): Promise<void> {
    while (await this.#rollUp());
  }

  /** One batch; true when more rows are waiting. */
  async #rollUp(): Promise<boolean> {
    const result = await queueStatsRollup(this.#db, this.#batchSize);
    this.count('rows_rolled_up', result.rows);
    this.count('events_rolled_up', result.events);
    return result.full;
  }
}
