import type { Db } from '../db.js';
import { incomingDeliveryPrune } from '../ops/incoming-webhook.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface IncomingDeliveryPrunerOptions extends Partial<LoopServiceOptions> {
  /**
   * How long an accepted delivery is remembered. Default 48 h: a captured
   * GitHub request carries no signed time, so its replay is refused only
   * while remembered; a Stripe replay is refused by its signed timestamp
   * after 300 s anyway.
   */
  maxAgeMs?: number;
  /** Rows deleted per statement. Default 1000. */
  batchSize?: number;
}

/** Forgets remembered incoming-webhook deliveries once a replay could no longer matter. Every `idleMs` (default 10 min). */
export class IncomingDeliveryPruner extends LoopService {
  readonly name = 'incoming-delivery-pruner';
  readonly #db: Db;
  readonly #maxAgeMs: number;
  readonly #batchSize: number;

  constructor(db: Db, options: IncomingDeliveryPrunerOptions = {}) {
    super({ idleMs: options.idleMs ?? 600_000, errorDelayMs: options.errorDelayMs, startDelayMs: options.startDelayMs ?? 35_000, log: options.log });
    this.#db = db;
    this.#maxAgeMs = options.maxAgeMs ?? 48 * 3_600_000;
    this.#batchSize = options.batchSize ?? 1000;
  }

  async runOnce(): Promise<number> {
    const pruned = await incomingDeliveryPrune(this.#db, this.#maxAgeMs, this.#batchSize);
    this.count('pruned', pruned);
    return pruned >= this.#batchSize ? 0 : this.idleMs;
  }
}
