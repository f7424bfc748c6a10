import type { Db, Queryable } from '../db.js';
import { run, sqlFile, transaction } from '../db.js';
import { isUuid, uuidv7 } from '../ids.js';
import { cronNext, validateSchedule } from '../cron.js';
import type { MissedPolicy } from '../schedule-plan.js';
import { jobInsertMany, type NewJob } from './job-insert-many.js';

const create = sqlFile(import.meta.url, './schedule-create.sql');
const get = sqlFile(import.meta.url, './schedule-get.sql');
const lock = sqlFile(import.meta.url, './schedule-lock.sql');
const list = sqlFile(import.meta.url, './schedule-list.sql');
const update = sqlFile(import.meta.url, './schedule-update.sql');
const remove = sqlFile(import.meta.url, './schedule-delete.sql');
const runList = sqlFile(import.meta.url, './schedule-run-list.sql');
const triggerRecord = sqlFile(import.meta.url, './schedule-trigger-record.sql');

/** The NOTIFY channel a schedule change is announced on (payload: the schedule id). */
export const SCHEDULES_CHANNEL = 'spool_schedules';

/** A row of spool.schedules. */
export interface ScheduleRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  cron_expression: string;
  timezone: string;
  queue_name: string;
  payload_template: unknown;
  priority: number;
  max_retries: number;
  timeout_seconds: number;
  /** timeout_seconds was given (create or update): the jobs it fires are enforced (migration 026). */
  timeout_set: boolean;
  /** max_retries was given (at creation or by an update); else the schedule's jobs take the queue's (migration 032). */
  max_retries_set: boolean;
  is_active: boolean;
  missed_policy: MissedPolicy;
  last_run_at: Date | null;
  next_run_at: Date | null;
  run_count: number;
  tags: unknown;
  metadata: unknown;
  created_at: Date;
  updated_at: Date;
}

/** A row of spool.schedule_runs. */
export interface ScheduleRunRow {
  id: string;
  organization_id: string;
  schedule_id: string;
  fire_time: Date;
  manual: boolean;
  job_id: string | null;
  status: 'pending' | 'running' | 'completed' | 'failed';
  error_message: string | null;
  started_at: Date;
  completed_at: Date | null;
}

export interface NewSchedule {
  organizationId: string;
  name: string;
  description?: string | null;
  cronExpression: string;
  timezone?: string;
  queueName: string;
  payloadTemplate: unknown;
  priority?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
  isActive?: boolean;
  missedPolicy?: MissedPolicy;
  tags?: unknown;
  metadata?: unknown;
}

/** Fields of an update; `undefined` keeps the current value, `null` clears a nullable one. */
export interface SchedulePatch {
  name?: string;
  description?: string | null;
  cronExpression?: string;
  timezone?: string;
  queueName?: string;
  payloadTemplate?: unknown;
  priority?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
  isActive?: boolean;
  missedPolicy?: MissedPolicy;
  tags?: unknown;
  metadata?: unknown;
  /** Recompute next_run_at from now even if the timing did not change (resume). */
  recompute?: boolean;
}

const json = (value: unknown): string | null => (value === undefined || value === null ? null : JSON.stringify(value));

/**
 * Creates a schedule after validating its expression and zone (a
 * ValidationError names the field). next_run_at is the first tick after
 * `now`; a paused schedule has none.
 */
export async function scheduleCreate(db: Queryable, input: NewSchedule, now: Date = new Date()): Promise<ScheduleRow> {
  const timezone = input.timezone ?? 'UTC';
  validateSchedule(input.cronExpression, timezone);
  const isActive = input.isActive ?? true;
  const nextRunAt = isActive ? cronNext(input.cronExpression, timezone, now) : null;
  const rows = await run<ScheduleRow>(db, create, [
    uuidv7(), input.organizationId, input.name, input.description ?? null, input.cronExpression, timezone, input.queueName,
    JSON.stringify(input.payloadTemplate ?? {}), input.priority ?? 0, input.maxRetries ?? 3, input.timeoutSeconds ?? 300,
    isActive, input.missedPolicy ?? 'once', nextRunAt, json(input.tags), json(input.metadata), input.timeoutSeconds !== undefined,
    input.maxRetries !== undefined,
  ]);
  return rows[0]!;
}

/** One schedule of the organization, or null (also for ids that are not UUIDs). */
export async function scheduleGet(db: Queryable, organizationId: string, id: string): Promise<ScheduleRow | null> {
  if (!isUuid(id)) return null;
  return (await run<ScheduleRow>(db, get, [organizationId, id]))[0] ?? null;
}

/** The organization's schedules, newest first. */
export async function scheduleList(db: Queryable, organizationId: string, limit: number, offset: number, queues: string[] | null = null): Promise<ScheduleRow[]> {
  return run<ScheduleRow>(db, list, [organizationId, limit, offset, queues]);
}

function merge(current: ScheduleRow, patch: SchedulePatch): ScheduleRow {
  const pick = <T>(value: T | undefined, fallback: T): T => (value === undefined ? fallback : value);
  return {
    ...current,
    name: pick(patch.name, current.name),
    description: pick(patch.description, current.description),
    cron_expression: pick(patch.cronExpression, current.cron_expression),
    timezone: pick(patch.timezone, current.timezone),
    queue_name: pick(patch.queueName, current.queue_name),
    payload_template: pick(patch.payloadTemplate, current.payload_template),
    priority: pick(patch.priority, current.priority),
    max_retries: pick(patch.maxRetries, current.max_retries),
    timeout_seconds: pick(patch.timeoutSeconds, current.timeout_seconds),
    is_active: pick(patch.isActive, current.is_active),
    missed_policy: pick(patch.missedPolicy, current.missed_policy),
    tags: pick(patch.tags, current.tags),
    metadata: pick(patch.metadata, current.metadata),
  };
}

/**
 * Partial update under a row lock. Changing the expression or zone, or
 * activating (resume), recomputes next_run_at from `now`, so a resumed
 * schedule continues with its next tick and never bursts through the ticks
 * it slept through. Pausing clears next_run_at. Null when not found.
 */
export async function scheduleUpdate(db: Db, organizationId: string, id: string, patch: SchedulePatch, now: Date = new Date()): Promise<ScheduleRow | null> {
  if (!isUuid(id)) return null;
  return transaction(db, async (client) => {
    const current = (await run<ScheduleRow>(client, lock, [organizationId, id]))[0];
    if (!current) return null;
    const next = merge(current, patch);
    const timingChanged = next.cron_expression !== current.cron_expression || next.timezone !== current.timezone;
    if (timingChanged) validateSchedule(next.cron_expression, next.timezone);
    let nextRunAt = current.next_run_at;
    if (!next.is_active) nextRunAt = null;
    else if (timingChanged || !current.is_active || patch.recompute || nextRunAt === null) nextRunAt = cronNext(next.cron_expression, next.timezone, now);
    const rows = await run<ScheduleRow>(client, update, [
      organizationId, id, next.name, next.description, next.cron_expression, next.timezone, next.queue_name,
      JSON.stringify(next.payload_template ?? {}), next.priority, next.max_retries, next.timeout_seconds,
      next.is_active, next.missed_policy, nextRunAt, json(next.tags), json(next.metadata), current.timeout_set || patch.timeoutSeconds !== undefined,
      current.max_retries_set || patch.maxRetries !== undefined,
    ]);
    return rows[0]!;
  });
}

/** Deletes a schedule (and its run history). False when not found. */
export async function scheduleDelete(db: Queryable, organizationId: string, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  return (await run(db, remove, [organizationId, id])).length > 0;
}

/**
 * The job a schedule creates: its queue, payload template, priority, retries,
 * timeout and (object) tags. Retries and a timeout the schedule was not
 * given are left to the queue's defaults, as for any job enqueued without
 * them (so that only a chosen timeout is enforced by the server).
 */
export function jobFromSchedule(schedule: Pick<ScheduleRow, 'organization_id' | 'queue_name' | 'payload_template' | 'priority' | 'max_retries' | 'max_retries_set' | 'timeout_seconds' | 'timeout_set' | 'tags'>): NewJob {
  const tags = schedule.tags;
  return {
    organizationId: schedule.organization_id,
    queueName: schedule.queue_name,
    payload: schedule.payload_template,
    priority: schedule.priority,
    maxRetries: schedule.max_retries_set ? schedule.max_retries : undefined,
    timeoutSeconds: schedule.timeout_set ? schedule.timeout_seconds : undefined,
    tags: tags !== null && typeof tags === 'object' && !Array.isArray(tags) ? (tags as Record<string, unknown>) : null,
  };
}

export interface TriggerResult {
  jobId: string;
  triggeredAt: Date;
}

/**
 * Creates one pending job from the schedule now (also while paused), records
 * a manual run and counts it, all in one transaction. Null when not found.
 */
export async function scheduleTrigger(db: Db, organizationId: string, id: string): Promise<TriggerResult | null> {
  if (!isUuid(id)) return null;
  return transaction(db, async (client) => {
    const schedule = (await run<ScheduleRow>(client, lock, [organizationId, id]))[0];
    if (!schedule) return null;
    const [job] = await jobInsertMany(client, [jobFromSchedule(schedule)]);
    const [recorded] = await run<{ triggered_at: Date }>(client, triggerRecord, [organizationId, id, job!.id]);
    return { jobId: job!.id, triggeredAt: recorded!.triggered_at };
  });
}

/** A schedule's runs, newest first; null when the schedule does not exist. */
export async function scheduleRunList(db: Queryable, organizationId: string, scheduleId: string, limit: number): Promise<ScheduleRunRow[] | null> {
  if (!(await scheduleGet(db, organizationId, scheduleId))) return null;
  return run<ScheduleRunRow>(db, runList, [organizationId, scheduleId, limit]);
}
