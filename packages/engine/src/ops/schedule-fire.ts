import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { planFiring, type FirePlan, type MissedPolicy } from '../schedule-plan.js';
import { jobInsertMany } from './job-insert-many.js';
import { jobFromSchedule } from './schedule.js';

const dueLock = sqlFile(import.meta.url, './schedule-due-lock.sql');
const runClaim = sqlFile(import.meta.url, './schedule-run-claim.sql');
const runAttach = sqlFile(import.meta.url, './schedule-run-attach.sql');
const advance = sqlFile(import.meta.url, './schedule-advance.sql');
const nextDue = sqlFile(import.meta.url, './schedule-next-due.sql');
const dueIds = sqlFile(import.meta.url, './schedule-due-ids.sql');

interface DueSchedule {
  id: string;
  organization_id: string;
  cron_expression: string;
  timezone: string;
  missed_policy: MissedPolicy;
  next_run_at: Date;
  queue_name: string;
  payload_template: unknown;
  priority: number;
  max_retries: number;
  max_retries_set: boolean;
  timeout_seconds: number;
  timeout_set: boolean;
  tags: unknown;
  db_now: Date;
}

/**
 * Plan limits for jobs created by cron. The engine knows no plans: the
 * server supplies this, and a tick it does not admit is recorded as a failed
 * run with the reason instead of creating a job.
 */
export interface ScheduleJobAdmission {
  /** How many of `count` new jobs the organization may create now (reserved inside `db`'s transaction), and why the rest may not. */
  admit(db: Queryable, organizationId: string, count: number): Promise<{ admitted: number; reason: string | null }>;
  /** Gives back admitted jobs that were not created (their tick had been fired elsewhere). */
  release(db: Queryable, organizationId: string, count: number): Promise<void>;
}

export interface ScheduleFireOptions {
  /** Schedules handled per call. */
  limit: number;
  /** Only this schedule (used to isolate a failing one). */
  onlyId?: string | null;
  misfireThresholdMs: number;
  missedCap: number;
  /** Record every planned tick as a failed run with this message instead of creating jobs. */
  failWith?: string | null;
  /** Plan limits on the jobs the ticks create; none = every tick creates its job. */
  admission?: ScheduleJobAdmission | null;
}

export interface ScheduleFireOutcome {
  /** Due schedules handled. */
  schedules: number;
  /** Jobs created (one per claimed tick). */
  fired: number;
  /** Ticks already fired elsewhere (the unique run row said so). */
  duplicates: number;
  /** Missed ticks dropped by the missed-fire policy. */
  skipped: number;
  /** Runs recorded as failed. */
  failed: number;
}

function plan(schedule: DueSchedule, options: ScheduleFireOptions): { plan: FirePlan; error: string | null } {
  try {
    return {
      plan: planFiring({
        cronExpression: schedule.cron_expression,
        timezone: schedule.timezone,
        nextRunAt: schedule.next_run_at,
        now: schedule.db_now,
        policy: schedule.missed_policy,
        misfireThresholdMs: options.misfireThresholdMs,
        missedCap: options.missedCap,
      }),
      error: options.failWith ?? null,
    };
  } catch (err) {
    // An expression that no longer evaluates stops (next_run_at NULL) with one failed run saying why.
    const message = `Schedule could not be evaluated: ${err instanceof Error ? err.message : String(err)}`;
    return { plan: { fireTimes: [schedule.next_run_at], skipped: 0, nextRunAt: null }, error: message };
  }
}

/**
 * Fires due schedules inside the caller's transaction: locks them (SKIP
 * LOCKED), plans their ticks, claims one run row per tick (a conflict means
 * another replica fired it), creates one job per claimed tick with
 * jobInsertMany (history + one NOTIFY), links runs to jobs and advances
 * next_run_at, so a tick's run, its job and the schedule's progress commit
 * or roll back together.
 */
export async function scheduleFireDue(db: Queryable, options: ScheduleFireOptions): Promise<ScheduleFireOutcome> {
  const due = await run<DueSchedule>(db, dueLock, [options.limit, options.onlyId ?? null]);
  const outcome: ScheduleFireOutcome = { schedules: due.length, fired: 0, duplicates: 0, skipped: 0, failed: 0 };
  if (due.length === 0) return outcome;

  const byId = new Map(due.map((s) => [s.id, s]));
  const ticks = { org: [] as string[], schedule: [] as string[], at: [] as Date[], status: [] as string[], error: [] as (string | null)[] };
  const nextRunAt = new Map<string, Date | null>();
  for (const schedule of due) {
    const planned = plan(schedule, options);
    outcome.skipped += planned.plan.skipped;
    nextRunAt.set(schedule.id, planned.plan.nextRunAt);
    for (const at of planned.plan.fireTimes) {
      ticks.org.push(schedule.organization_id);
      ticks.schedule.push(schedule.id);
      ticks.at.push(at);
      ticks.status.push(planned.error ? 'failed' : 'pending');
      ticks.error.push(planned.error);
    }
  }

  const admitted = options.admission ? await admitTicks(db, options.admission, ticks) : new Map<string, number>();

  const claimed = ticks.at.length === 0
    ? []
    : await run<{ id: string; schedule_id: string; fire_time: Date }>(db, runClaim, [ticks.org, ticks.schedule, ticks.at, ticks.status, ticks.error]);
  outcome.duplicates = ticks.at.length - claimed.length;
  const failedTicks = new Set(ticks.schedule.map((id, i) => (ticks.status[i] === 'failed' ? tickKey(id, ticks.at[i]!) : '')));
  const toCreate = claimed.filter((r) => !failedTicks.has(tickKey(r.schedule_id, r.fire_time)));
  outcome.failed = claimed.length - toCreate.length;
  if (options.admission) await releaseUnused(db, options.admission, admitted, toCreate.map((r) => byId.get(r.schedule_id)!.organization_id));

  const firedPer = new Map<string, number>();
  if (toCreate.length > 0) {
    const jobs = await jobInsertMany(db, toCreate.map((r) => jobFromSchedule(byId.get(r.schedule_id)!)));
    await run(db, runAttach, [toCreate.map((r) => r.id), jobs.map((j) => j.id)]);
    for (const r of toCreate) firedPer.set(r.schedule_id, (firedPer.get(r.schedule_id) ?? 0) + 1);
    outcome.fired = toCreate.length;
  }
  await run(db, advance, [due.map((s) => s.id), due.map((s) => nextRunAt.get(s.id) ?? null), due.map((s) => firedPer.get(s.id) ?? 0)]);
  return outcome;
}

function tickKey(scheduleId: string, at: Date): string {
  return `${scheduleId}@${at.getTime()}`;
}

/**
 * Asks the plan for room for each organization's pending ticks (in id order,
 * so concurrent firers take the organizations' locks in the same order) and
 * marks the ticks beyond it failed with the reason; earlier ticks go first.
 * Returns what each organization was admitted.
 */
async function admitTicks(db: Queryable, admission: ScheduleJobAdmission, ticks: { org: string[]; status: string[]; error: (string | null)[] }): Promise<Map<string, number>> {
  const pendingByOrg = new Map<string, number[]>();
  ticks.org.forEach((org, i) => {
    if (ticks.status[i] === 'pending') pendingByOrg.set(org, [...(pendingByOrg.get(org) ?? []), i]);
  });
  const admitted = new Map<string, number>();
  for (const org of [...pendingByOrg.keys()].sort()) {
    const indexes = pendingByOrg.get(org)!;
    const decision = await admission.admit(db, org, indexes.length);
    admitted.set(org, decision.admitted);
    for (const i of indexes.slice(decision.admitted)) {
      ticks.status[i] = 'failed';
      ticks.error[i] = decision.reason ?? 'Plan limit reached';
    }
  }
  return admitted;
}

async function releaseUnused(db: Queryable, admission: ScheduleJobAdmission, admitted: Map<string, number>, createdFor: string[]): Promise<void> {
  const created = new Map<string, number>();
  for (const org of createdFor) created.set(org, (created.get(org) ?? 0) + 1);
  for (const [org, n] of admitted) {
    const unused = n - (created.get(org) ?? 0);
    if (unused > 0) await admission.release(db, org, unused);
  }
}

/** Milliseconds until the earliest active next_run_at (database clock; may be negative), or null when none. */
export async function scheduleNextDueIn(db: Queryable): Promise<number | null> {
  const rows = await run<{ due_in_ms: number | null }>(db, nextDue, []);
  return rows[0]?.due_in_ms ?? null;
}

/** Ids of due schedules (unlocked), to retry a failed batch one schedule at a time. */
export async function scheduleDueIds(db: Queryable, limit: number): Promise<string[]> {
  return (await run<{ id: string }>(db, dueIds, [limit])).map((row) => row.id);
}
