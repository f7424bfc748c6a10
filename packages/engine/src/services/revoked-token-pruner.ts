import type { Db } from '../db.js';
import { revokedTokenPrune } from '../ops/retention.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface RevokedTokenPrunerOptions extends Partial<LoopServiceOptions> {
  /** Keep a revoked token this long past its own expiry (clock skew). Default 5 min. */
  graceMs?: number;
  /** Rows deleted per statement. Default 1000. */
  batchSize?: number;
}

/** Forgets logout revocations of tokens that have expired anyway. Every `idleMs` (default 10 min). */
export class RevokedTokenPruner extends LoopService {
  readonly name = 'revoked-token-pruner';
  readonly #db: Db;
  readonly #graceMs: number;
  readonly #batchSize: number;

  constructor(db: Db, options: RevokedTokenPrunerOptions = {}) {
    super({ idleMs: options.idleMs ?? 600_000, errorDelayMs: options.errorDelayMs, startDelayMs: options.startDelayMs ?? 25_000, log: options.log });
    this.#db = db;
    this.#graceMs = options.graceMs ?? 300_000;
    this.#batchSize = options.batchSize ?? 1000;
  }

  async runOnce(): Promise<number> {
    const pruned = await revokedTokenPrune(this.#db, this.#graceMs, this.#batchSize);
    this.count('pruned', pruned);
    return pruned >= this.#batchSize ? 0 : this.idleMs;
  }
}
