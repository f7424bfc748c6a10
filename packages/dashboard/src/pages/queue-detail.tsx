import type { JSX } from 'preact';
import { ActivityCharts } from '../components/activity-charts';
import { ErrorState, Link, Loading, PageHeader, StatusBadge, Tile } from '../components/ui';
import { api } from '../lib/api';
import { formatCount, formatCountOf, formatDuration, formatPercent, formatSeconds } from '../lib/format';
import { useLiveRefresh, useResource } from '../lib/hooks';
import type { QueueStats } from '../lib/types';

function Figures({ s }: { s: QueueStats }): JSX.Element {
  const finished = s.completed_jobs_24h + s.failed_jobs_24h;
  const rate = finished === 0 ? null : s.failed_jobs_24h / finished;
  const oldest = s.max_job_age_seconds;
  return (
    <section class="tiles" aria-label="Signals">
      <Tile label="Depth" value={formatCount(s.pending_jobs)} hint={s.scheduled_jobs === undefined ? 'pending' : `${formatCount(s.scheduled_jobs)} scheduled`} />
      <Tile label="In flight" value={formatCount(s.processing_jobs)} hint={formatCountOf(s.active_workers, 'worker')} />
      <Tile label="Oldest pending" value={formatSeconds(oldest)} hint="age of the oldest waiting job" tone={oldest !== null && oldest > 300 ? (oldest > 3600 ? 'bad' : 'warn') : undefined} />
      <Tile label="Completed 24 h" value={formatCount(s.completed_jobs_24h)} hint={`failure rate ${formatPercent(rate)}`} tone={rate !== null && rate > 0.05 ? 'warn' : undefined} />
      <Tile label="Failed 24 h" value={formatCount(s.failed_jobs_24h)} hint="out of retries" tone={s.failed_jobs_24h > 0 ? 'bad' : 'ok'} />
      <Tile label="Run time" value={formatDuration(s.avg_processing_time_ms)} hint="average, last 24 h" />
    </section>
  );
}

/** One queue: its current figures and the activity the server keeps for it. */
export function QueueDetail({ name }: { name: string }): JSX.Element {
  const stats = useResource((signal) => api<QueueStats>('GET', `/queues/${encodeURIComponent(name)}/stats`, { signal }), [name]);
  const mine = (data: Record<string, unknown>) => data.queue_name === name || data.queue === name;
  useLiveRefresh(stats.reload, { when: (e) => (e.type.startsWith('job.') || e.type.startsWith('queue.')) && mine(e.data), pollMs: 10_000, livePollMs: 15_000 }, [name]);
  const s = stats.data;
  return (
    <div class="page">
      <PageHeader title={name}>
        {s ? <StatusBadge status={s.paused ? 'paused' : 'active'} /> : null}
        <Link href={`/jobs?queue=${encodeURIComponent(name)}`}>Jobs</Link>
        <Link href={`/dead-letters?queue=${encodeURIComponent(name)}`}>Dead letters</Link>
        <Link href="/queues">All queues</Link>
      </PageHeader>
      {s ? <Figures s={s} /> : stats.error ? <ErrorState error={stats.error} what="Queue figures" retry={stats.reload} /> : <Loading />}
      <h2>Activity</h2>
      <ActivityCharts
        queue={name}
        fallback={(why) => <p class="muted">{why === 'forbidden' ? 'This key may not read the activity history.' : 'This server keeps no activity history.'}</p>}
      />
    </div>
  );
}
