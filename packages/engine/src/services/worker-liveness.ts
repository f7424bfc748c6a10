import type { Db } from '../db.js';
import { workerMarkOffline } from '../ops/retention.js';
import { LoopService, type LoopServiceOptions } from './service.js';

/** How long a worker may go without a heartbeat before it counts as offline (docs/compatibility.md §3.5). */
export const WORKER_SILENCE_MS_DEFAULT = 120_000;

export interface WorkerLivenessOptions extends Partial<LoopServiceOptions> {
  /** A worker without a heartbeat for this long is offline. Default 2 min (docs/compatibility.md §3.5). */
  silenceMs?: number;
  /** Workers handled per transaction. Default 100. */
  batchSize?: number;
}

/**
 * Marks workers that stopped heartbeating offline and gives their
 * processing jobs back to pending at once (no retry counted), instead of
 * waiting for each lease to run out. Every `idleMs` (default 15 s).
 */
export class WorkerLiveness extends LoopService {
  readonly name = 'worker-liveness';
  readonly #db: Db;
  readonly #silenceMs: number;
  readonly #batchSize: number;

  constructor(db: Db, options: WorkerLivenessOptions = {}) {
    super({ idleMs: options.idleMs ?? 15_000, errorDelayMs: options.errorDelayMs, startDelayMs: options.startDelayMs ?? 5_000, log: options.log });
    this.#db = db;
    this.#silenceMs = options.silenceMs ?? WORKER_SILENCE_MS_DEFAULT;
    this.#batchSize = options.batchSize ?? 100;
  }

  async runOnce(): Promise<number> {
    const { workers, jobs } = await workerMarkOffline(this.#db, this.#silenceMs, this.#batchSize);
    this.count('workers_offline', workers);
    this.count('jobs_released', jobs);
    return workers >= this.#batchSize ? 0 : this.idleMs;
  }
}
