import type { Db } from '../db.js';
import { eventPrune, historyPrune, jobRetentionDelete } from '../ops/retention.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface JobRetentionOptions extends Partial<LoopServiceOptions> {
  /** Days a completed job is kept after it finished. Default 7. */
  completedDays?: number;
  /** Days a failed job is kept. Default 30 (like the dead-letter queue: someone may want to look). */
  failedDays?: number;
  /** Days a cancelled (or expired) job is kept. Default 7. */
  cancelledDays?: number;
  /** Days an event of the event log (queue, worker, schedule events) is kept. Default 7. */
  eventDays?: number;
  /**
   * Days a dead-lettered job is kept (DlqRetention deletes them; here it only
   * bounds how long a queue's rows of routine transitions, migration 021,
   * are kept: the longest of its windows). Default 30.
   */
  deadletterDays?: number;
  /** Jobs (and events) deleted per statement. Default 1000. */
  batchSize?: number;
}

/**
 * Deletes finished jobs (completed, failed, cancelled) past their retention
 * window, and their history with them; history of live jobs is never
 * touched. Each queue may override the windows in
 * queue_config.settings.retention.{completed,failed,cancelled}_days.
 * Bounded batches; runs again at once while batches are full, else every
 * `idleMs` (default 60 s). Dead-lettered jobs: see DlqRetention. The event
 * log (spool.events) is pruned here too: its rows belong to no job, so
 * nothing else would delete them.
 */
export class JobRetention extends LoopService {
  readonly name = 'job-retention';
  readonly #db: Db;
  readonly #days: { completed: number; failed: number; cancelled: number };
  readonly #eventDays: number;
  readonly #deadletterDays: number;
  readonly #batchSize: number;

  constructor(db: Db, options: JobRetentionOptions = {}) {
    super({ idleMs: options.idleMs ?? 60_000, errorDelayMs: options.errorDelayMs, startDelayMs: options.startDelayMs ?? 10_000, log: options.log });
    this.#db = db;
    this.#days = { completed: options.completedDays ?? 7, failed: options.failedDays ?? 30, cancelled: options.cancelledDays ?? 7 };
    this.#eventDays = options.eventDays ?? 7;
    this.#deadletterDays = options.deadletterDays ?? 30;
    this.#batchSize = options.batchSize ?? 1000;
  }

  async runOnce(): Promise<number> {
    const deleted = await jobRetentionDelete(this.#db, this.#days, this.#batchSize);
    this.count('jobs_deleted', deleted.jobs);
    this.count('history_deleted', deleted.history);
    const events = await eventPrune(this.#db, this.#eventDays, this.#batchSize);
    this.count('events_deleted', events);
    const routine = await historyPrune(this.#db, { ...this.#days, deadletter: this.#deadletterDays }, this.#batchSize);
    this.count('history_deleted', routine);
    return deleted.jobs >= this.#batchSize || events >= this.#batchSize || routine >= this.#batchSize ? 0 : this.idleMs;
  }
}
