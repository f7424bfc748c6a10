import type { Db } from '../db.js';
import { run, sqlFile } from '../db.js';
import { LoopService, type LoopServiceOptions } from './service.js';

const statistics = sqlFile(import.meta.url, '../ops/jobs-live-statistics.sql');

export interface JobStatisticsOptions extends Partial<LoopServiceOptions> {
  /** Between looks once the table has statistics (autovacuum keeps them from then on). Default 10 minutes. */
  settledMs?: number;
}

/**
 * Analyzes spool.jobs_live while it holds jobs but has no column statistics
 * at all: a new database, between its first jobs and autovacuum's first
 * ANALYZE (up to a naptime, a minute by default, after a threshold of rows).
 * Without statistics every read of a queue is estimated at one row, a sort
 * of it costs nothing, and the planner may read the claim's ranges through a
 * listing index and sort them, which reads every pending job of the queue
 * on every claim: 200 ms a claim at 100,000 pending jobs on PostgreSQL 15
 * (docs/performance.md, "The uncapped claim as a statement of its own").
 * With statistics from any sample the estimates grow with the table, and
 * the ANALYZE invalidates the plans cached without them. Jobs notifications
 * wake it (`jobsArrived`) until the table has statistics, so a bulk load
 * into a new database is analyzed after its first statement; then it looks
 * every `settledMs`, for a table whose statistics were dropped. Runs on the
 * leader.
 */
export class JobStatistics extends LoopService {
  readonly name = 'job-statistics';
  readonly #db: Db;
  readonly #settledMs: number;
  #settled = false;

  constructor(db: Db, options: JobStatisticsOptions = {}) {
    super({ idleMs: options.idleMs ?? 5_000, log: options.log });
    this.#db = db;
    this.#settledMs = options.settledMs ?? 600_000;
  }

  /** Jobs were enqueued: while the table has no statistics, look now. */
  jobsArrived(): void {
    if (!this.#settled) this.wake();
  }

  async runOnce(): Promise<number> {
    const [facts] = await run<{ has_statistics: boolean; has_jobs: boolean }>(this.#db, statistics, []);
    if (facts!.has_statistics) {
      this.#settled = true;
      return this.#settledMs;
    }
    this.#settled = false;
    if (!facts!.has_jobs) return this.idleMs;
    await this.#db.query('ANALYZE spool.jobs_live');
    this.count('analyzed', 1);
    return this.idleMs;
  }
}
