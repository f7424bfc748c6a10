import { Type } from 'typebox';
import type { ScheduleRow, ScheduleRunRow } from '@spool/engine';

const Timestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const NullableString = Type.Union([Type.String(), Type.Null()]);

/** The contract's Schedule object (docs/compatibility.md §3.9): every key present, unset ones null. */
export const ScheduleSchema = Type.Object({
  id: Type.String(),
  organization_id: Type.String(),
  name: Type.String(),
  description: NullableString,
  cron_expression: Type.String(),
  timezone: Type.String(),
  queue_name: Type.String(),
  payload_template: Type.Unknown(),
  priority: Type.Integer(),
  max_retries: Type.Integer(),
  timeout_seconds: Type.Integer(),
  is_active: Type.Boolean(),
  last_run_at: Timestamp,
  next_run_at: Timestamp,
  run_count: Type.Integer(),
  tags: Type.Unknown(),
  metadata: Type.Unknown(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  missed_policy: Type.String({ enum: ['skip', 'once', 'all'], description: 'extension: what happens to ticks missed while no Spool process ran (docs/scheduler.md)' }),
});

/** One run (docs/compatibility.md §3.9 history), plus the extensions `fire_time` and `manual`. */
export const ScheduleRunSchema = Type.Object({
  id: Type.String(),
  schedule_id: Type.String(),
  job_id: NullableString,
  status: Type.String(),
  error_message: NullableString,
  started_at: Type.String({ format: 'date-time' }),
  completed_at: Timestamp,
  fire_time: Type.String({ format: 'date-time', description: 'extension: the cron tick this run fired (the trigger time for manual runs)' }),
  manual: Type.Boolean({ description: 'extension: true for POST /schedules/{id}/trigger' }),
});

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export function scheduleToWire(row: ScheduleRow): Record<string, unknown> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    name: row.name,
    description: row.description,
    cron_expression: row.cron_expression,
    timezone: row.timezone,
    queue_name: row.queue_name,
    payload_template: row.payload_template,
    priority: row.priority,
    max_retries: row.max_retries,
    timeout_seconds: row.timeout_seconds,
    is_active: row.is_active,
    last_run_at: iso(row.last_run_at),
    next_run_at: iso(row.next_run_at),
    run_count: row.run_count,
    tags: row.tags ?? null,
    metadata: row.metadata ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    missed_policy: row.missed_policy,
  };
}

export function scheduleRunToWire(row: ScheduleRunRow): Record<string, unknown> {
  return {
    id: row.id,
    schedule_id: row.schedule_id,
    job_id: row.job_id,
    status: row.status,
    error_message: row.error_message,
    started_at: row.started_at.toISOString(),
    completed_at: iso(row.completed_at),
    fire_time: row.fire_time.toISOString(),
    manual: row.manual,
  };
}
