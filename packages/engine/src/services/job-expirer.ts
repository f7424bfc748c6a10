import type { Db } from '../db.js';
import { jobExpire } from '../ops/maintenance.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface JobExpirerOptions extends Partial<LoopServiceOptions> {
  /** Rows expired per statement. Default 1000. */
  batchSize?: number;
}

/**
 * Ends jobs whose `expires_at` passed before they started, recording why.
 * Claims already skip such jobs, so this only tidies status; default every 5 s.
 */
export class JobExpirer extends LoopService {
  readonly name = 'job-expirer';
  readonly #db: Db;
  readonly #batchSize: number;

  constructor(db: Db, options: JobExpirerOptions = {}) {
    super({ idleMs: options.idleMs ?? 5_000, log: options.log });
    this.#db = db;
    this.#batchSize = options.batchSize ?? 1000;
  }

  async runOnce(): Promise<number> {
    const expired = await jobExpire(this.#db, this.#batchSize);
    this.count('expired', expired);
    return expired >= this.#batchSize ? 0 : this.idleMs;
  }
}
