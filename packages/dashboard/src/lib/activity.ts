import { api, ApiError } from './api';
import type { ActivityPoint, ActivitySeries } from './types';

/**
 * The activity history the server keeps per queue (GET /stats/timeseries):
 * the last hour and day by the minute, the last week by the hour.
 */
export const ACTIVITY_RANGES = {
  hour: { label: 'Last hour', step: 60, span: 3600 },
  day: { label: 'Last 24 h', step: 60, span: 86_400 },
  week: { label: 'Last 7 days', step: 3600, span: 7 * 86_400 },
} as const;
export type ActivityRange = keyof typeof ACTIVITY_RANGES;

/** Why there is no history to show, if there is none. */
export type ActivityUnavailable = 'missing' | 'forbidden';

export interface Activity {
  series: ActivitySeries | null;
  unavailable: ActivityUnavailable | null;
}

/** Reads one range of one queue's (or every queue's) activity; a server without the endpoint, or a key without the read role, gives none. */
export async function loadActivity(range: ActivityRange, queue: string | null, signal?: AbortSignal): Promise<Activity> {
  const { step, span } = ACTIVITY_RANGES[range];
  const from = Math.floor(Date.now() / 1000) - span;
  const query = new URLSearchParams({ step: String(step), from: String(from) });
  if (queue !== null) query.set('queue_name', queue);
  try {
    return { series: await api<ActivitySeries>('GET', `/stats/timeseries?${query}`, { signal }), unavailable: null };
  } catch (err) {
    if (err instanceof ApiError && err.missingEndpoint) return { series: null, unavailable: 'missing' };
    if (err instanceof ApiError && err.status === 403) return { series: null, unavailable: 'forbidden' };
    throw err;
  }
}

/**
 * Columns for a chart: unix seconds, then one array per field. Counts get a
 * closing point one step after the last bucket so that the step drawing the
 * last bucket has a width.
 */
export function activityColumns(series: ActivitySeries, fields: (keyof ActivityPoint)[], closing: boolean): [number[], ...(number | null)[][]] {
  const xs = series.points.map((p) => Date.parse(p.t) / 1000);
  const columns = fields.map((field) => series.points.map((p) => p[field] as number | null));
  if (closing && xs.length > 0) {
    xs.push(xs[xs.length - 1]! + series.step);
    for (const column of columns) column.push(column[column.length - 1] ?? null);
  }
  return [xs, ...columns];
}
