import type { Db } from '../db.js';
import { jobRescueExpired } from '../ops/maintenance.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface LeaseReaperOptions extends Partial<LoopServiceOptions> {
  /** Rows rescued per statement. Default 1000. */
  batchSize?: number;
}

/**
 * Returns jobs whose lease expired (their worker died or hung) to pending,
 * or to the dead-letter queue when retries are exhausted. Runs every
 * `idleMs` (default 1 s) and immediately again while a batch was full.
 */
export class LeaseReaper extends LoopService {
  readonly name = 'lease-reaper';
  readonly #db: Db;
  readonly #batchSize: number;

  constructor(db: Db, options: LeaseReaperOptions = {}) {
    super({ idleMs: options.idleMs ?? 1_000, log: options.log });
    this.#db = db;
    this.#batchSize = options.batchSize ?? 1000;
  }

  async runOnce(): Promise<number> {
    const { rescued, deadlettered } = await jobRescueExpired(this.#db, this.#batchSize);
    this.count('rescued', rescued - deadlettered);
    this.count('deadlettered', deadlettered);
    return rescued >= this.#batchSize ? 0 : this.idleMs;
  }
}
