import type { Db } from '../db.js';
import { eventPrune, historyPrune, jobRetentionDelete, jobsDonePartitionDropNext, jobsDonePartitionsPremake } from '../ops/retention.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface JobRetentionOptions extends Partial<LoopServiceOptions> {
  /** Days an event of the event log (queue, worker, schedule events) is kept. Default 7. */
  eventDays?: number;
  /** Jobs (and events) deleted per statement. Default 1000. */
  batchSize?: number;
}

/**
 * Retention of finished jobs, their history with them; history of live jobs
 * is never touched. The windows are per status (spool.retention_defaults:
 * completed and cancelled 7 days, failed 30) and each queue may override
 * them in queue_config.settings.retention.{completed,failed,cancelled}_days.
 *  - Completed and cancelled jobs sit in one partition of spool.jobs_done
 *    per day their window ends on (migration 047): each run makes the
 *    partitions of the next days and drops those whose day is over, one
 *    DROP TABLE for a day's jobs instead of a delete per job.
 *  - Failed jobs, which can still be retried, are deleted in bounded batches.
 * Runs again at once while there is more to do, else every `idleMs`
 * (default 60 s). Dead-lettered jobs: see DlqRetention. The event log
 * (spool.events) is pruned here too: its rows belong to no job, so nothing
 * else would delete them.
 */
export class JobRetention extends LoopService {
  readonly name = 'job-retention';
  readonly #db: Db;
  readonly #eventDays: number;
  readonly #batchSize: number;

  constructor(db: Db, options: JobRetentionOptions = {}) {
    super({ idleMs: options.idleMs ?? 60_000, errorDelayMs: options.errorDelayMs, startDelayMs: options.startDelayMs ?? 10_000, log: options.log });
    this.#db = db;
    this.#eventDays = options.eventDays ?? 7;
    this.#batchSize = options.batchSize ?? 1000;
  }

  async runOnce(): Promise<number> {
    this.count('partitions_made', await jobsDonePartitionsPremake(this.#db));
    // Usually one a day; each in its own transaction.
    for (let dropped = await jobsDonePartitionDropNext(this.#db); dropped; dropped = await jobsDonePartitionDropNext(this.#db)) {
      this.count('partitions_dropped', 1);
      this.count('jobs_deleted', dropped.jobs);
      this.count('history_deleted', dropped.history);
    }
    const deleted = await jobRetentionDelete(this.#db, ['failed'], this.#batchSize);
    this.count('jobs_deleted', deleted.jobs);
    this.count('history_deleted', deleted.history);
    const events = await eventPrune(this.#db, this.#eventDays, this.#batchSize);
    this.count('events_deleted', events);
    const routine = await historyPrune(this.#db, this.#batchSize);
    this.count('history_deleted', routine);
    return deleted.jobs >= this.#batchSize || events >= this.#batchSize || routine >= this.#batchSize ? 0 : this.idleMs;
  }
}
