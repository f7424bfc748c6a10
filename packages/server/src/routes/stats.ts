import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ValidationError } from '@spool/protocol';
import { statsTimeseries, STATS_STEPS, type StatsStep } from '@spool/engine';
import type { AppContext } from '../app.js';
import { grantOf } from '../http/route-authorization.js';

/** Most points one request may ask for: 40 h at step=60, 100 days at step=3600. */
export const TIMESERIES_MAX_POINTS = 2400;
/** What `from` defaults to, before `to`: the last hour by the minute, the last week by the hour. */
const DEFAULT_SPAN_S: Record<StatsStep, number> = { 60: 3600, 3600: 7 * 86_400 };

const NullableMs = Type.Union([Type.Number(), Type.Null()]);
const Count = Type.Integer({ minimum: 0 });

const PointSchema = Type.Object({
  t: Type.String({ format: 'date-time', description: 'start of the bucket (it lasts `step` seconds)' }),
  enqueued: Count,
  started: Type.Integer({ minimum: 0, description: 'claims, a re-run\'s included' }),
  completed: Count,
  failed: Type.Integer({ minimum: 0, description: 'failed attempts: reported failures and expired leases (retried or not)' }),
  retried: Type.Integer({ minimum: 0, description: 'failed attempts put back for another try' }),
  deadlettered: Type.Integer({ minimum: 0, description: 'jobs that failed for good' }),
  expired: Type.Integer({ minimum: 0, description: 'jobs whose expires_at passed before they ran' }),
  wait_p50_ms: NullableMs,
  wait_p95_ms: NullableMs,
  wait_p99_ms: Type.Union([Type.Number(), Type.Null()], { description: 'from runnable to first start, of the jobs first started in the bucket; null without any' }),
  run_p50_ms: NullableMs,
  run_p95_ms: NullableMs,
  run_p99_ms: Type.Union([Type.Number(), Type.Null()], { description: 'from start to completion, of the jobs completed in the bucket; null without any' }),
});

const TimeseriesResponse = Type.Object({
  step: Type.Integer({ description: 'seconds per point: 60 or 3600' }),
  from: Type.String({ format: 'date-time', description: 'first point (from, rounded down to the step)' }),
  to: Type.String({ format: 'date-time', description: 'end of the last point (to, rounded up to the step, at most the current bucket\'s end)' }),
  queue_name: Type.Union([Type.String(), Type.Null()], { description: 'the queue, or null: every queue the key may read, added up' }),
  points: Type.Array(PointSchema),
});

const TimeseriesQuery = Type.Object({
  queue_name: Type.Optional(Type.String({ description: 'one queue; absent: every queue the key may read, added up' })),
  from: Type.Optional(Type.String({ description: 'start: RFC 3339 date-time or unix seconds; default `to` minus 1 hour (step 60) or 7 days (step 3600)' })),
  to: Type.Optional(Type.String({ description: 'end: RFC 3339 date-time or unix seconds; default now' })),
  step: Type.Optional(Type.String({ description: 'seconds per point: 60 (kept 7 days) or 3600 (kept 90 days); default 60' })),
});
type TimeseriesQuery = { queue_name?: string; from?: string; to?: string; step?: string };

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ]([01]\d|2[0-3]):([0-5]\d)(:([0-5]\d)(\.\d{1,9})?)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
const UNIX_SECONDS = /^-?\d{1,12}$/;

function shown(value: string): string {
  return value.length > 40 ? `${value.slice(0, 37)}...` : value;
}

/** A time parameter in ms since the epoch: an RFC 3339 date-time with its offset, or unix seconds. */
function parseTime(name: string, raw: string): number {
  const value = raw.trim();
  let ms = Number.NaN;
  if (UNIX_SECONDS.test(value)) ms = Number(value) * 1000;
  else {
    const parts = RFC3339.exec(value);
    // Date.parse reads 2025-02-30 as March 2: the day must exist in its month.
    if (parts && Number(parts[3]) >= 1 && Number(parts[3]) === new Date(Date.UTC(Number(parts[1]), Number(parts[2]) - 1, Number(parts[3]))).getUTCDate()) {
      ms = Date.parse(value.replace(' ', 'T'));
    }
  }
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) {
    throw new ValidationError(`${name} must be an RFC 3339 date-time with an offset (2025-01-31T14:00:00Z) or unix seconds (got "${shown(raw)}")`, { field: name });
  }
  return ms;
}

function parseStep(raw: string | undefined): StatsStep {
  if (raw === undefined || raw.trim() === '') return 60;
  const step = Number(raw.trim());
  if (!(STATS_STEPS as readonly number[]).includes(step) || !/^\d+$/.test(raw.trim())) {
    throw new ValidationError(`step must be 60 (per minute, kept 7 days) or 3600 (per hour, kept 90 days) (got "${shown(raw)}")`, { field: 'step' });
  }
  return step as StatsStep;
}

export interface TimeseriesRange {
  step: StatsStep;
  from: Date;
  to: Date;
}

/**
 * The buckets a request asks for, or a 400 that says what is accepted:
 * `from` rounds down and `to` up to the step, `to` stops at the end of the
 * current bucket (later ones have nothing yet), and at most
 * TIMESERIES_MAX_POINTS points.
 */
export function timeseriesRange(query: TimeseriesQuery, now = Date.now()): TimeseriesRange {
  const step = parseStep(query.step);
  const stepMs = step * 1000;
  const toMs = query.to === undefined || query.to.trim() === '' ? now : parseTime('to', query.to);
  const fromMs = query.from === undefined || query.from.trim() === '' ? toMs - DEFAULT_SPAN_S[step] * 1000 : parseTime('from', query.from);
  if (fromMs >= toMs) {
    throw new ValidationError(`from must be before to (from ${new Date(fromMs).toISOString()}, to ${new Date(toMs).toISOString()})`, { field: 'from' });
  }
  const first = Math.floor(fromMs / stepMs) * stepMs;
  const end = Math.ceil(toMs / stepMs) * stepMs;
  const points = (end - first) / stepMs;
  if (points > TIMESERIES_MAX_POINTS) {
    throw new ValidationError(
      `from..to spans ${points} points of ${step} s; at most ${TIMESERIES_MAX_POINTS} (40 hours at step=60, 100 days at step=3600): narrow the range${step === 60 ? ' or use step=3600' : ''}`,
      { field: 'from' },
    );
  }
  const current = Math.floor(now / stepMs) * stepMs + stepMs;
  return { step, from: new Date(first), to: new Date(Math.max(first, Math.min(end, current))) };
}

/** Extension: the per-queue activity history (docs/history.md). */
export function statsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Querystring: TimeseriesQuery }>('/stats/timeseries', {
    config: { operation: 'stats.read' },
    schema: {
      tags: ['queues', 'extension'],
      summary: 'Extension: jobs enqueued, started, completed, failed, retried, dead-lettered and expired, with wait and run time percentiles, per minute (7 days) or per hour (90 days), for one queue or every queue the key may read',
      querystring: TimeseriesQuery,
      response: { 200: TimeseriesResponse },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const queueName = request.query.queue_name === undefined || request.query.queue_name === '' ? null : request.query.queue_name;
    if (queueName !== null) grant.queue(queueName);
    const range = timeseriesRange(request.query);
    const points = await statsTimeseries(ctx.db, {
      organizationId: grant.organizationId,
      queueName,
      queueFilter: grant.queueFilter,
      from: range.from,
      to: range.to,
      step: range.step,
    });
    return {
      step: range.step,
      from: range.from.toISOString(),
      to: range.to.toISOString(),
      queue_name: queueName,
      points: points.map((p) => ({ ...p, t: p.t.toISOString() })),
    };
  });
}
