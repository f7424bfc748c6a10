import type { Db } from '../db.js';
import { jobRetentionDelete } from '../ops/retention.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface DlqRetentionOptions extends Partial<LoopServiceOptions> {
  /** Jobs deleted per statement. Default 1000. */
  batchSize?: number;
}

/**
 * Deletes dead-lettered jobs (their dead_letter_queue rows go by cascade,
 * their history with them) older than the window: per queue
 * queue_config.settings.retention.deadletter_days, else
 * spool.retention_defaults (30 days).
 * Every `idleMs` (default 5 min), at once again while batches are full.
 */
export class DlqRetention extends LoopService {
  readonly name = 'dlq-retention';
  readonly #db: Db;
  readonly #batchSize: number;

  constructor(db: Db, options: DlqRetentionOptions = {}) {
    super({ idleMs: options.idleMs ?? 300_000, errorDelayMs: options.errorDelayMs, startDelayMs: options.startDelayMs ?? 15_000, log: options.log });
    this.#db = db;
    this.#batchSize = options.batchSize ?? 1000;
  }

  async runOnce(): Promise<number> {
    const deleted = await jobRetentionDelete(this.#db, ['deadletter'], this.#batchSize);
    this.count('jobs_deleted', deleted.jobs);
    this.count('history_deleted', deleted.history);
    return deleted.jobs >= this.#batchSize ? 0 : this.idleMs;
  }
}
