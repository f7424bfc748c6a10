import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ACTIVITY_RANGES, activityColumns, loadActivity, type ActivityRange, type ActivityUnavailable } from '../lib/activity';
import { useLiveRefresh, useResource } from '../lib/hooks';
import { Chart } from './chart';
import { ErrorState, Loading } from './ui';

const RANGE_KEY = 'spool.activity-range';

function savedRange(): ActivityRange {
  const saved = sessionStorage.getItem(RANGE_KEY);
  return saved !== null && saved in ACTIVITY_RANGES ? (saved as ActivityRange) : 'hour';
}

/** Polling periods: a week by the hour changes slowly. */
const POLL_MS: Record<ActivityRange, number> = { hour: 15_000, day: 30_000, week: 60_000 };

interface ActivityChartsProps {
  /** One queue, or null for every queue the key may read. */
  queue: string | null;
  /** Shown instead when the server keeps no history (or the key may not read it). */
  fallback?: (why: ActivityUnavailable) => ComponentChildren;
  /** More charts in the same grid, after these. */
  children?: ComponentChildren;
}

/**
 * The activity the server keeps (GET /stats/timeseries): jobs per minute or
 * hour, wait and run time percentiles, over the last hour, day or week, read
 * at once and polled while the page is open.
 */
export function ActivityCharts({ queue, fallback, children }: ActivityChartsProps): JSX.Element {
  const [range, setRange] = useState<ActivityRange>(savedRange);
  const activity = useResource((signal) => loadActivity(range, queue, signal), [range, queue]);
  // The last hour (61 points) also follows the queue's job events, at most every 750 ms.
  const follows = (type: string, data: Record<string, unknown>) =>
    range === 'hour' && type.startsWith('job.') && type !== 'job.progress' && type !== 'job.log' && (queue === null || data.queue_name === queue);
  useLiveRefresh(activity.reload, { when: (e) => follows(e.type, e.data), pollMs: POLL_MS[range], livePollMs: POLL_MS[range] }, [range, queue]);
  const pick = (next: ActivityRange) => {
    sessionStorage.setItem(RANGE_KEY, next);
    setRange(next);
  };
  const data = activity.data;
  if (data?.unavailable && fallback) return <>{fallback(data.unavailable)}</>;
  const series = data?.series ?? null;
  const per = ACTIVITY_RANGES[range].step === 60 ? 'minute' : 'hour';
  const xRange: [number, number] | undefined = series ? [Date.parse(series.from) / 1000, Date.parse(series.to) / 1000] : undefined;
  return (
    <section
      class="charts activity"
      aria-label="Activity"
      data-range={range}
      data-loaded={series ? 'true' : 'false'}
      // What the charts hold, for the end-to-end tests (a canvas has no text to read).
      data-enqueued={series ? series.points.reduce((sum, p) => sum + p.enqueued, 0) : undefined}
      data-completed={series ? series.points.reduce((sum, p) => sum + p.completed, 0) : undefined}
    >
      <div class="chart-toolbar">
        <div class="range-picker" role="group" aria-label="Time range">
          {(Object.keys(ACTIVITY_RANGES) as ActivityRange[]).map((key) => (
            <button key={key} type="button" aria-pressed={range === key} class={range === key ? 'active' : ''} onClick={() => pick(key)}>{ACTIVITY_RANGES[key].label}</button>
          ))}
        </div>
        {activity.error && series === null ? <ErrorState error={activity.error} what="Activity" retry={activity.reload} /> : null}
        {data?.unavailable === 'forbidden' ? <p class="muted small">This key may not read the activity history (it needs an admin or read-only key).</p> : null}
        {!data && !activity.error ? <Loading label="Loading activity…" /> : null}
      </div>
      {series ? (
        <>
          <Chart
            title={`Jobs per ${per}`}
            stepped
            integer
            range={xRange}
            data={activityColumns(series, ['enqueued', 'completed', 'failed', 'deadlettered'], true)}
            series={[
              { label: 'enqueued', color: '--c-created' },
              { label: 'completed', color: '--c-completed' },
              { label: 'failed', color: '--c-failed' },
              { label: 'dead-lettered', color: '--c-deadletter' },
            ]}
          />
          <Chart
            title="Wait before start"
            durations
            range={xRange}
            data={activityColumns(series, ['wait_p50_ms', 'wait_p95_ms', 'wait_p99_ms'], false)}
            series={[
              { label: 'p50', color: '--c-pending' },
              { label: 'p95', color: '--c-scheduled' },
              { label: 'p99', color: '--c-deadletter' },
            ]}
          />
          <Chart
            title="Run time"
            durations
            range={xRange}
            data={activityColumns(series, ['run_p50_ms', 'run_p95_ms', 'run_p99_ms'], false)}
            series={[
              { label: 'p50', color: '--c-completed' },
              { label: 'p95', color: '--c-processing' },
              { label: 'p99', color: '--c-failed' },
            ]}
          />
        </>
      ) : null}
      {children}
    </section>
  );
}
