import type { Db } from '../db.js';
import { jobNextScheduledAt, jobPromoteScheduled } from '../ops/maintenance.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface ScheduledPromoterOptions extends Partial<LoopServiceOptions> {
  /** Rows promoted per statement. Default 1000. */
  batchSize?: number;
}

/**
 * Makes scheduled jobs pending at their time. It sleeps until the earliest
 * scheduled_at (not a fixed sweep) and is woken early by the enqueue NOTIFY
 * when a sooner job arrives, so a delayed job is claimable within a few ms
 * of its time.
 */
export class ScheduledPromoter extends LoopService {
  readonly name = 'scheduled-promoter';
  readonly #db: Db;
  readonly #batchSize: number;

  constructor(db: Db, options: ScheduledPromoterOptions = {}) {
    super({ idleMs: options.idleMs ?? 5_000, log: options.log });
    this.#db = db;
    this.#batchSize = options.batchSize ?? 1000;
  }

  async runOnce(): Promise<number> {
    const promoted = await jobPromoteScheduled(this.#db, this.#batchSize);
    this.count('promoted', promoted);
    if (promoted >= this.#batchSize) return 0;
    const next = await jobNextScheduledAt(this.#db);
    if (!next) return this.idleMs;
    return Math.max(0, next.getTime() - Date.now());
  }

  /** A job scheduled for `at` (epoch ms) was inserted. */
  scheduledFor(at: number): void {
    this.wakeAt(at - Date.now());
  }
}
