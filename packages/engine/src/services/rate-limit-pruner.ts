import type { Db } from '../db.js';
import { rateLimitPrune } from '../ops/rate-limit.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface RateLimitPrunerOptions extends Partial<LoopServiceOptions> {
  /** Keep a counter this long after its window ended. Default 1 min. */
  graceMs?: number;
  /** Rows deleted per statement. Default 5000. */
  batchSize?: number;
}

/** Forgets rate-limit counters of windows that have ended. Every `idleMs` (default 1 min). */
export class RateLimitPruner extends LoopService {
  readonly name = 'rate-limit-pruner';
  readonly #db: Db;
  readonly #graceMs: number;
  readonly #batchSize: number;

  constructor(db: Db, options: RateLimitPrunerOptions = {}) {
    super({ idleMs: options.idleMs ?? 60_000, errorDelayMs: options.errorDelayMs, startDelayMs: options.startDelayMs ?? 30_000, log: options.log });
    this.#db = db;
    this.#graceMs = options.graceMs ?? 60_000;
    this.#batchSize = options.batchSize ?? 5000;
  }

  async runOnce(): Promise<number> {
    const pruned = await rateLimitPrune(this.#db, this.#graceMs, this.#batchSize);
    this.count('pruned', pruned);
    return pruned >= this.#batchSize ? 0 : this.idleMs;
  }
}
