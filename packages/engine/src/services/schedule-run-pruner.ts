import type { Db } from '../db.js';
import { scheduleRunPrune } from '../ops/retention.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface ScheduleRunPrunerOptions extends Partial<LoopServiceOptions> {
  /** Days of schedule run history kept. Default 7 (a per-second schedule writes 86,400 runs a day). */
  days?: number;
  /** Rows deleted per statement. Default 1000. */
  batchSize?: number;
}

/** Deletes schedule runs (GET /schedules/{id}/history) past their window. Every `idleMs` (default 5 min). */
export class ScheduleRunPruner extends LoopService {
  readonly name = 'schedule-run-pruner';
  readonly #db: Db;
  readonly #days: number;
  readonly #batchSize: number;

  constructor(db: Db, options: ScheduleRunPrunerOptions = {}) {
    super({ idleMs: options.idleMs ?? 300_000, errorDelayMs: options.errorDelayMs, startDelayMs: options.startDelayMs ?? 20_000, log: options.log });
    this.#db = db;
    this.#days = options.days ?? 7;
    this.#batchSize = options.batchSize ?? 1000;
  }

  async runOnce(): Promise<number> {
    const pruned = await scheduleRunPrune(this.#db, this.#days, this.#batchSize);
    this.count('pruned', pruned);
    return pruned >= this.#batchSize ? 0 : this.idleMs;
  }
}
