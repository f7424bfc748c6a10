import { cronNext, cronNextN, cronPrevious } from './cron.js';

/** What to do with ticks missed by more than the misfire threshold (docs/scheduler.md). */
export type MissedPolicy = 'skip' | 'once' | 'all';
export const MISSED_POLICIES: readonly MissedPolicy[] = ['skip', 'once', 'all'];

/** Missed ticks are counted (for the `missed_skipped` counter) up to this many. */
const MISSED_COUNT_LIMIT = 1000;

export interface FirePlanInput {
  cronExpression: string;
  timezone: string;
  /** The schedule's next_run_at: the first tick not yet handled. */
  nextRunAt: Date;
  /** Database time. */
  now: Date;
  policy: MissedPolicy;
  /** A tick later than this is "missed" and handled by the policy; up to it, it just fires late. */
  misfireThresholdMs: number;
  /** Most missed ticks `all` fires (the newest ones). */
  missedCap: number;
  /** Most late-but-not-missed ticks fired in one plan; the rest stay due for the next round. */
  maxLateTicks?: number;
}

export interface FirePlan {
  /** Ticks to fire, ascending. */
  fireTimes: Date[];
  /** Missed ticks not fired (counted up to 1,000 missed ticks, so a lower bound after very long outages). */
  skipped: number;
  /** The new next_run_at (null: the expression never fires again). */
  nextRunAt: Date | null;
}

/**
 * Decides which ticks of a due schedule fire now. Ticks in
 * [now − threshold, now] fire whatever the policy (a replica restart or a
 * leader failover only makes them late). Older ticks are missed:
 * `skip` fires none, `once` fires the newest one, `all` fires the newest
 * `missedCap`. Pure: the firer and tests call it with any `now`.
 */
export function planFiring(input: FirePlanInput): FirePlan {
  const { cronExpression: expr, timezone: tz, nextRunAt, now } = input;
  if (nextRunAt.getTime() > now.getTime()) return { fireTimes: [], skipped: 0, nextRunAt };
  const maxLate = input.maxLateTicks ?? 1000;
  const onTimeFrom = new Date(Math.max(nextRunAt.getTime(), now.getTime() - input.misfireThresholdMs));

  const late: Date[] = [];
  let cursor: Date | null = new Date(onTimeFrom.getTime() - 1);
  while (late.length < maxLate) {
    cursor = cronNext(expr, tz, cursor);
    if (cursor === null || cursor.getTime() > now.getTime()) break;
    late.push(cursor);
  }
  const truncated = late.length === maxLate;

  let missed: Date[] = [];
  let skipped = 0;
  if (nextRunAt.getTime() < onTimeFrom.getTime()) {
    // Count forwards from next_run_at (bounded by the ticks that really passed), pick backwards from the threshold.
    let count = 0;
    let tick: Date | null = new Date(nextRunAt.getTime() - 1);
    while (count < MISSED_COUNT_LIMIT) {
      tick = cronNext(expr, tz, tick);
      if (tick === null || tick.getTime() >= onTimeFrom.getTime()) break;
      count += 1;
    }
    const keep = input.policy === 'skip' ? 0 : input.policy === 'once' ? 1 : input.missedCap;
    if (keep > 0) missed = cronPrevious(expr, tz, onTimeFrom, keep).filter((t) => t.getTime() >= nextRunAt.getTime()).reverse();
    skipped = Math.max(0, count - missed.length);
  }

  const fireTimes = [...missed, ...late];
  const next = truncated ? cronNext(expr, tz, late[late.length - 1]!) : cronNext(expr, tz, now);
  return { fireTimes, skipped, nextRunAt: next };
}

/** The next `count` fire times after `after` (preview). */
export function schedulePreview(expression: string, timezone: string, after: Date, count: number): Date[] {
  return cronNextN(expression, timezone, after, count);
}
