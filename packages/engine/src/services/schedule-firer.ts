import type { Db } from '../db.js';
import { transaction } from '../db.js';
import { scheduleDueIds, scheduleFireDue, scheduleNextDueIn, type ScheduleFireOutcome, type ScheduleJobAdmission } from '../ops/schedule-fire.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface ScheduleFirerOptions extends Partial<LoopServiceOptions> {
  /** Schedules fired per transaction. Default 100. */
  batchSize?: number;
  /**
   * A tick later than this is "missed" and handled by the schedule's
   * missed_policy; up to it, it simply fires late (leader failover,
   * restarts). Default 60 s (Quartz's misfire threshold).
   */
  misfireThresholdMs?: number;
  /** Most missed ticks a schedule with missed_policy "all" fires at once. Default 100. */
  missedCap?: number;
  /** Plan limits on the jobs ticks create (supplied by the server); none = unlimited. */
  admission?: ScheduleJobAdmission | null;
}

// SQLSTATE classes that mean "the database is unreachable or busy", not "this schedule is broken".
const TRANSIENT = /^(08|40|53|57)/;

/**
 * Fires cron schedules. It sleeps until the earliest next_run_at (no fixed
 * sweep) and is woken by a NOTIFY on `spool_schedules` when a schedule is
 * created or changed, so a tick fires within a few ms of its time. Safe with
 * any number of firers: each tick's run row is unique (see
 * ops/schedule-run-claim.sql); it runs on the leader only to save work.
 * Default idle re-check 60 s; retry after an error 1 s.
 */
export class ScheduleFirer extends LoopService {
  readonly name = 'schedule-firer';
  readonly #db: Db;
  readonly #batchSize: number;
  readonly #misfireThresholdMs: number;
  readonly #missedCap: number;
  readonly #admission: ScheduleJobAdmission | null;

  constructor(db: Db, options: ScheduleFirerOptions = {}) {
    super({ idleMs: options.idleMs ?? 60_000, errorDelayMs: options.errorDelayMs ?? 1_000, log: options.log });
    this.#db = db;
    this.#batchSize = options.batchSize ?? 100;
    this.#misfireThresholdMs = options.misfireThresholdMs ?? 60_000;
    this.#missedCap = options.missedCap ?? 100;
    this.#admission = options.admission ?? null;
  }

  async runOnce(): Promise<number> {
    const handled = await this.#fireBatch();
    if (handled >= this.#batchSize) return 0;
    // Measured on the database clock from (about) when the query was sent, so
    // the query's own latency does not make the next tick late.
    const sentAt = Date.now();
    const dueIn = await scheduleNextDueIn(this.#db);
    if (dueIn === null) return this.idleMs;
    return Math.max(0, Math.ceil(sentAt + dueIn - Date.now()));
  }

  #fire(onlyId: string | null, failWith: string | null = null): Promise<ScheduleFireOutcome> {
    return transaction(this.#db, (client) => scheduleFireDue(client, {
      limit: onlyId ? 1 : this.#batchSize,
      onlyId,
      misfireThresholdMs: this.#misfireThresholdMs,
      missedCap: this.#missedCap,
      failWith,
      admission: this.#admission,
    }));
  }

  #record(outcome: ScheduleFireOutcome): void {
    this.count('fired', outcome.fired);
    this.count('duplicates', outcome.duplicates);
    this.count('missed_skipped', outcome.skipped);
    this.count('failed', outcome.failed);
  }

  /** Fires one batch; if it fails for a reason other than the database being away, isolates the schedule at fault. */
  async #fireBatch(): Promise<number> {
    try {
      const outcome = await this.#fire(null);
      this.#record(outcome);
      return outcome.schedules;
    } catch (err) {
      if (TRANSIENT.test(String((err as { code?: unknown }).code ?? ''))) throw err;
      this.log('schedule firing failed for a batch; retrying schedule by schedule', err);
    }
    const ids = await scheduleDueIds(this.#db, this.#batchSize);
    for (const id of ids) {
      try {
        this.#record(await this.#fire(id));
      } catch (err) {
        if (TRANSIENT.test(String((err as { code?: unknown }).code ?? ''))) throw err;
        const message = `Job could not be created: ${err instanceof Error ? err.message : String(err)}`.slice(0, 2000);
        this.log(`schedule ${id} failed to fire; recording a failed run`, err);
        this.#record(await this.#fire(id, message));
      }
    }
    return ids.length;
  }
}
