import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ActivityCharts } from '../components/activity-charts';
import { Chart } from '../components/chart';
import { EmptyState, ErrorState, Link, Loading, PageHeader, StatusBadge, Tile } from '../components/ui';
import { formatCount, formatDuration, formatPercent, formatSeconds } from '../lib/format';
import { useLiveRefresh, useLiveStatus, useResource } from '../lib/hooks';
import { onOverviewChange, sampleSeries, takeSnapshot, throughputSeries, type QueueRow, type Snapshot } from '../lib/overview-store';

const SAMPLE_MS = 5000;

function useSeriesVersion(): number {
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const bump = () => setVersion((v) => v + 1);
    const unsubscribe = onOverviewChange(bump);
    bump(); // samples taken between the first render and this subscription
    return unsubscribe;
  }, []);
  // The throughput chart also advances with the clock when nothing happens.
  useEffect(() => {
    const interval = setInterval(() => setVersion((v) => v + 1), 15_000);
    return () => clearInterval(interval);
  }, []);
  return version;
}

function Signals({ s }: { s: Snapshot }): JSX.Element {
  const finished = (s.completed24h ?? 0) + (s.failed24h ?? 0);
  const failureRate = s.failed24h === null || finished === 0 ? null : (s.failed24h ?? 0) / finished;
  const oldest = s.oldestPendingSeconds;
  return (
    <section class="tiles" aria-label="Signals">
      <Tile label="Queue depth" value={formatCount(s.pending)} hint={`${formatCount(s.processing)} processing`} tone={s.pending > 1000 ? 'warn' : undefined} />
      <Tile label="Oldest pending" value={formatSeconds(oldest)} hint="age of the oldest waiting job" tone={oldest !== null && oldest > 300 ? (oldest > 3600 ? 'bad' : 'warn') : undefined} />
      <Tile label="Dead letters" value={<Link href="/dead-letters">{formatCount(s.deadletter)}</Link>} hint="jobs that ran out of retries" tone={s.deadletter > 0 ? 'bad' : 'ok'} />
      <Tile label="Processing time" value={formatDuration(s.avgProcessingMs)} hint={s.avgWaitMs === null ? 'average, last 24 h' : `wait ${formatDuration(s.avgWaitMs)} · last 24 h`} />
      <Tile label="Completed 24 h" value={formatCount(s.completed24h)} hint={`failure rate ${formatPercent(failureRate)}`} tone={failureRate !== null && failureRate > 0.05 ? 'warn' : undefined} />
      <Tile label="Workers" value={s.workers ? `${s.workers.healthy} / ${s.workers.total}` : <Link href="/workers">see workers</Link>} hint="healthy / live" tone={s.workers && s.workers.total > 0 && s.workers.healthy < s.workers.total ? 'warn' : undefined} />
    </section>
  );
}

/** Throughput counted from the live event stream since sign-in: for a server that keeps no activity history. */
function LiveThroughput(): JSX.Element {
  const [xs, created, completed, failed] = throughputSeries();
  return (
    <Chart
      title="Jobs per minute"
      stepped
      integer
      data={[xs, created, completed, failed]}
      series={[
        { label: 'enqueued', color: '--c-created' },
        { label: 'completed', color: '--c-completed' },
        { label: 'failed', color: '--c-failed' },
      ]}
    />
  );
}

function Charts(): JSX.Element {
  useSeriesVersion();
  const live = useLiveStatus();
  const samples = sampleSeries();
  const t = samples.map((s) => s.t);
  const sampled = (history: boolean) => (
    <>
      {history ? null : <LiveThroughput />}
      <Chart
        title="Queue depth"
        integer
        data={[t, samples.map((s) => s.pending), samples.map((s) => s.processing), samples.map((s) => s.deadletter)]}
        series={[
          { label: 'pending', color: '--c-pending' },
          { label: 'processing', color: '--c-processing' },
          { label: 'dead letters', color: '--c-deadletter' },
        ]}
      />
      <Chart title="Oldest pending job" durations data={[t, samples.map((s) => (s.oldestPendingSeconds === null ? null : Math.round(s.oldestPendingSeconds) * 1000))]} series={[{ label: 'age', color: '--c-scheduled' }]} />
      <p class="muted small chart-note">
        {history
          ? <>Activity is kept by the server (7 days by the minute, 90 days by the hour) and read every few seconds; depth and age are sampled every {SAMPLE_MS / 1000} s while this page is open.</>
          : <>{live === 'live' ? 'Counted from the live event stream' : 'The live event stream is not connected; counts resume when it is'} since this tab signed in; depth is sampled every {SAMPLE_MS / 1000} s while this page is open. Long-term history: scrape <a href="/metrics">/metrics</a>.</>}
      </p>
    </>
  );
  return (
    <ActivityCharts queue={null} fallback={() => <section class="charts" aria-label="Charts">{sampled(false)}</section>}>
      {sampled(true)}
    </ActivityCharts>
  );
}

function QueueTable({ queues }: { queues: QueueRow[] }): JSX.Element {
  if (queues.length === 0) return <EmptyState title="No queues yet">Queues appear when the first job is enqueued or a queue is configured.</EmptyState>;
  return (
    <div class="table-wrap">
      <table>
        <thead><tr><th>Queue</th><th class="num">Pending</th><th class="num">Processing</th><th class="num">Oldest pending</th><th class="num">Failed 24 h</th><th>State</th></tr></thead>
        <tbody>
          {queues.map((q) => (
            <tr key={q.name}>
              <td><Link href={`/queues/${encodeURIComponent(q.name)}`}>{q.name}</Link></td>
              <td class="num">{formatCount(q.pending)}</td>
              <td class="num">{formatCount(q.processing)}</td>
              <td class="num">{formatSeconds(q.oldestPendingSeconds)}</td>
              <td class="num">{formatCount(q.failed24h)}</td>
              <td>{q.paused ? <StatusBadge status="paused" /> : <StatusBadge status="active" />}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Overview(): JSX.Element {
  const snapshot = useResource(() => takeSnapshot(), []);
  // Sampled on a clock, not per event: under load events arrive by the thousand.
  useLiveRefresh(snapshot.reload, { pollMs: SAMPLE_MS, livePollMs: SAMPLE_MS });
  const s = snapshot.data;
  return (
    <div class="page">
      <PageHeader title="Overview" />
      {s ? <Signals s={s} /> : snapshot.error ? <ErrorState error={snapshot.error} what="Figures" retry={snapshot.reload} /> : <Loading />}
      <Charts />
      <h2>Queues</h2>
      {s ? <QueueTable queues={s.queues} /> : null}
      {s && !s.aggregate ? <p class="muted small">This server has no GET /api/v1/dashboard: figures come from /jobs/stats and per-queue stats.</p> : null}
    </div>
  );
}
