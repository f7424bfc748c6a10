import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { EmptyState, ErrorState, Link, Loading, PageHeader, Pager, StatusBadge } from '../components/ui';
import { api, query } from '../lib/api';
import { formatRelative, formatTime, shortId } from '../lib/format';
import { useLiveRefresh, useNow, useResource } from '../lib/hooks';
import { navigate, setQuery } from '../lib/router';
import { JOB_STATUSES, type JobSummary, type QueueSummary } from '../lib/types';

const PAGE_SIZE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function Filters({ queue, status, tag }: { queue: string; status: string; tag: string }): JSX.Element {
  const [search, setSearch] = useState('');
  const [queueInput, setQueueInput] = useState(queue);
  const [tagInput, setTagInput] = useState(tag);
  useEffect(() => setQueueInput(queue), [queue]);
  useEffect(() => setTagInput(tag), [tag]);
  const queues = useResource((signal) => api<QueueSummary[]>('GET', '/queues', { signal }).catch(() => []), []);
  const apply = (event: Event) => {
    event.preventDefault();
    setQuery({ queue: queueInput.trim(), tag: tagInput.trim(), page: null });
  };
  const find = (event: Event) => {
    event.preventDefault();
    const id = search.trim();
    if (id) navigate(`/jobs/${encodeURIComponent(id.toLowerCase())}`);
  };
  return (
    <div class="filters">
      <form class="filter-row" onSubmit={apply} aria-label="Filter jobs">
        <label>Queue
          <input name="queue" list="queue-names" value={queueInput} placeholder="any" onInput={(e) => setQueueInput((e.target as HTMLInputElement).value)} onChange={apply} />
        </label>
        <datalist id="queue-names">{(queues.data ?? []).map((q) => <option key={q.queue_name} value={q.queue_name} />)}</datalist>
        <label>Status
          <select name="status" value={status} onChange={(e) => setQuery({ status: (e.target as HTMLSelectElement).value, page: null })}>
            <option value="">any</option>
            {JOB_STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label>Tag
          <input name="tag" value={tagInput} placeholder="key" onInput={(e) => setTagInput((e.target as HTMLInputElement).value)} onChange={apply} />
        </label>
        <button type="submit">Filter</button>
        {queue || status || tag ? <button type="button" class="link-button" onClick={() => setQuery({ queue: null, status: null, tag: null, page: null })}>Clear</button> : null}
      </form>
      <form class="filter-row search" onSubmit={find} role="search">
        <label>Job id
          <input name="id" value={search} placeholder="find a job by id" onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={!search.trim()} title={search.trim() && !UUID.test(search.trim()) ? 'Job ids are UUIDs' : undefined}>Open</button>
      </form>
    </div>
  );
}

export function JobTable({ jobs, now }: { jobs: JobSummary[]; now: number }): JSX.Element {
  return (
    <div class="table-wrap">
      <table class="jobs-table">
        <thead><tr><th>Job</th><th>Queue</th><th>Status</th><th class="num">Priority</th><th class="num">Retries</th><th>Created</th><th>Finished</th></tr></thead>
        <tbody>
          {jobs.map((job) => (
            <tr key={job.id} data-job-id={job.id}>
              <td class="mono"><Link href={`/jobs/${job.id}`} title={job.id}>{shortId(job.id)}</Link></td>
              <td>{job.queue_name}</td>
              <td><StatusBadge status={job.status} /></td>
              <td class="num">{job.priority}</td>
              <td class="num">{job.retry_count}</td>
              <td title={formatTime(job.created_at)}>{formatRelative(job.created_at, now)}</td>
              <td title={formatTime(job.completed_at)}>{job.completed_at ? formatRelative(job.completed_at, now) : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Jobs({ query: q }: { query: URLSearchParams }): JSX.Element {
  const queue = q.get('queue') ?? '';
  const status = q.get('status') ?? '';
  const tag = q.get('tag') ?? '';
  const page = Math.max(1, Number.parseInt(q.get('page') ?? '1', 10) || 1);
  const now = useNow(5000);
  const jobs = useResource(
    (signal) => api<JobSummary[]>('GET', `/jobs${query({ queue_name: queue, status, tag, limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE })}`, { signal }),
    [queue, status, tag, page],
  );
  // Only the first page follows the stream: later pages would shift under the reader.
  useLiveRefresh(jobs.reload, { when: (e) => page === 1 && e.type.startsWith('job.') && e.type !== 'job.progress' && e.type !== 'job.log' && (!queue || e.data.queue_name === queue), pollMs: page === 1 ? 5000 : 0 }, [queue, page]);
  const list = jobs.data;
  return (
    <div class="page">
      <PageHeader title="Jobs" />
      <Filters queue={queue} status={status} tag={tag} />
      {!list ? (jobs.error ? <ErrorState error={jobs.error} what="Jobs" retry={jobs.reload} /> : <Loading />) : list.length === 0 ? (
        <EmptyState title={page > 1 ? 'No more jobs' : 'No jobs match'}>{queue || status || tag ? 'Try other filters.' : 'Enqueue a job with POST /api/v1/jobs and it shows up here.'}</EmptyState>
      ) : (
        <JobTable jobs={list} now={now} />
      )}
      <Pager page={page} hasNext={(list?.length ?? 0) === PAGE_SIZE} onPage={(p) => setQuery({ page: p === 1 ? null : p })} />
    </div>
  );
}
