import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ConfirmDialog, Modal } from '../components/dialog';
import { notify } from '../components/toast';
import { EmptyState, ErrorState, JsonBlock, Link, Loading, PageHeader, Pager, StatusBadge } from '../components/ui';
import { api, ApiError, errorMessage, query } from '../lib/api';
import { formatRelative, formatTime, shortId } from '../lib/format';
import { useLiveRefresh, useNow, useResource } from '../lib/hooks';
import { navigate, setQuery } from '../lib/router';
import { JOB_STATUSES, type Job, type JobStats, type JobStatus, type JobSummary, type QueueSummary } from '../lib/types';

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

/** Which selected jobs each bulk action applies to; the others are skipped, not sent to be refused. */
const BULK: Record<'retry' | 'cancel', { label: string; done: string; applies: readonly JobStatus[] }> = {
  retry: { label: 'Retry', done: 'Retried', applies: ['failed', 'deadletter'] },
  cancel: { label: 'Cancel', done: 'Cancelled', applies: ['pending', 'scheduled', 'processing'] },
};

/** Counts by status (the organization's, all queues), each a link that filters the list. */
function StateCounts({ status, stats }: { status: string; stats: JobStats | null }): JSX.Element | null {
  if (!stats) return null;
  return (
    <ul class="state-counts" aria-label="Jobs by status">
      {JOB_STATUSES.map((s) => (
        <li key={s}>
          <a href={`/jobs?status=${s}`} aria-current={status === s ? 'true' : undefined} data-status={s}
            onClick={(e) => { e.preventDefault(); setQuery({ status: status === s ? null : s, page: null }); }}>
            {s} <span class="n">{stats[s].toLocaleString()}</span>
          </a>
        </li>
      ))}
      <li class="muted small">in all queues</li>
    </ul>
  );
}

function PayloadPreview({ id }: { id: string }): JSX.Element {
  const job = useResource((signal) => api<Job>('GET', `/jobs/${encodeURIComponent(id)}`, { signal }), [id]);
  if (!job.data) return job.error ? <ErrorState error={job.error} what="Jobs" /> : <Loading />;
  return (
    <div class="inspect">
      <div><h3>Payload</h3><JsonBlock value={job.data.payload} /></div>
      {job.data.last_error ? <div><h3>Last error</h3><pre class="error-text">{job.data.last_error}</pre></div> : null}
    </div>
  );
}

/** One job of a bulk action: null when done, else why it was refused. */
async function applyOne(kind: 'retry' | 'cancel', id: string): Promise<string | null> {
  try {
    if (kind === 'retry') await api('POST', `/jobs/${encodeURIComponent(id)}/retry`);
    else await api('DELETE', `/jobs/${encodeURIComponent(id)}`);
    return null;
  } catch (err) {
    // A running job answers 409 with cancel_requested: its worker is told, which is what was asked.
    if (kind === 'cancel' && err instanceof ApiError && (err.details as { cancel_requested?: boolean } | null)?.cancel_requested) return null;
    return `${shortId(id)}: ${errorMessage(err)}`;
  }
}

function reportBulk(kind: 'retry' | 'cancel', done: number, refused: string[], stopped = false): void {
  notify(`${BULK[kind].done} ${done} job(s)${stopped ? ' before being stopped' : ''}${refused.length ? `; refused ${refused.length}: ${refused.slice(0, 3).join('; ')}` : ''}.`, refused.length ? 'bad' : 'ok');
}

async function runBulk(kind: 'retry' | 'cancel', jobs: JobSummary[]): Promise<void> {
  let done = 0;
  const refused: string[] = [];
  for (const job of jobs) {
    const why = await applyOne(kind, job.id);
    if (why === null) done += 1;
    else refused.push(why);
  }
  reportBulk(kind, done, refused);
}

/** The most jobs one "all matching" action collects; past it the dialog says so and acts on the oldest. */
const BY_FILTER_MAX = 10_000;
const LIST_PAGE_MAX = 100;
const BY_FILTER_LANES = 6;

/**
 * Retry or cancel every job that matches the list's filters, not only the
 * selected ones: the matching jobs of the statuses the action applies to are
 * listed first (oldest first, through the same GET /jobs the page reads),
 * then acted on (six requests at a time) with a progress bar and a Stop button.
 */
function ByFilterDialog({ kind, queue, status, tag, onClose, onDone }: {
  kind: 'retry' | 'cancel';
  queue: string;
  status: string;
  tag: string;
  onClose: () => void;
  onDone: () => void;
}): JSX.Element {
  const statuses = BULK[kind].applies.filter((s) => !status || s === status);
  const [ids, setIds] = useState<string[] | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  const [progress, setProgress] = useState<{ done: number; refused: string[]; running: boolean } | null>(null);
  const stop = useRef(false);
  useEffect(() => {
    let cancelled = false;
    (async () => {
      const found: string[] = [];
      for (const s of statuses) {
        for (let offset = 0; found.length < BY_FILTER_MAX; offset += LIST_PAGE_MAX) {
          const page = await api<JobSummary[]>('GET', `/jobs${query({ queue_name: queue, status: s, tag, limit: LIST_PAGE_MAX, offset, order_by: 'created_at', order_dir: 'asc' })}`);
          found.push(...page.map((j) => j.id));
          if (page.length < LIST_PAGE_MAX || cancelled) break;
        }
      }
      if (!cancelled) setIds([...new Set(found)].slice(0, BY_FILTER_MAX));
    })().catch((err: unknown) => { if (!cancelled) setFailed(errorMessage(err)); });
    return () => { cancelled = true; stop.current = true; };
  }, []);
  const run = async () => {
    if (!ids) return;
    stop.current = false;
    const refused: string[] = [];
    let done = 0;
    setProgress({ done: 0, refused, running: true });
    // A few requests in flight at once: one at a time, 10,000 jobs would take minutes.
    let next = 0;
    const lane = async () => {
      while (!stop.current && next < ids.length) {
        const why = await applyOne(kind, ids[next++]!);
        if (why === null) done += 1;
        else refused.push(why);
        setProgress({ done: done + refused.length, refused, running: true });
      }
    };
    await Promise.all(Array.from({ length: BY_FILTER_LANES }, lane));
    const stopped = stop.current;
    setProgress({ done: done + refused.length, refused, running: false });
    reportBulk(kind, done, refused, stopped);
    onDone();
  };
  const filters = [queue && `queue ${queue}`, tag && `tag ${tag}`].filter(Boolean).join(', ');
  const total = ids?.length ?? 0;
  const percent = total === 0 ? 0 : Math.round(((progress?.done ?? 0) / total) * 100);
  return (
    <Modal title={`${BULK[kind].label} all matching jobs`} onClose={() => { stop.current = true; onClose(); }}>
        <p>{BULK[kind].label} every {statuses.join(', ')} job{filters ? ` of ${filters}` : ' in every queue'}, not only this page.</p>
        {failed ? <p class="error-text">Could not list the jobs: {failed}</p>
          : !ids ? <p class="muted" data-testid="by-filter-counting">Counting matching jobs…</p>
          : <p data-testid="by-filter-count">{total.toLocaleString()} job(s) match{total === BY_FILTER_MAX ? ` (at most ${BY_FILTER_MAX.toLocaleString()} at a time: the oldest)` : ''}.</p>}
        {progress ? (
          <div>
            <div class="progress-bar" role="progressbar" aria-label={`${BULK[kind].label} progress`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={percent}>
              <div class="progress-fill" style={{ width: `${percent}%` }} />
            </div>
            <p class="muted small" data-testid="by-filter-progress">{progress.done.toLocaleString()} of {total.toLocaleString()}{progress.refused.length ? ` · ${progress.refused.length} refused` : ''}</p>
          </div>
        ) : null}
        <div class="form-actions">
          {progress?.running
            ? <button type="button" onClick={() => { stop.current = true; }}>Stop</button>
            : <button type="button" onClick={onClose}>{progress ? 'Close' : 'Cancel'}</button>}
          {!progress ? <button type="button" class={kind === 'cancel' ? 'danger' : 'primary'} disabled={!ids || total === 0} onClick={() => void run()}>{BULK[kind].label} {total.toLocaleString()}</button> : null}
        </div>
    </Modal>
  );
}

export function JobTable({ jobs, now, selected, onToggle, open, onOpen }: {
  jobs: JobSummary[];
  now: number;
  selected?: Set<string>;
  onToggle?: (ids: string[], on: boolean) => void;
  open?: string | null;
  onOpen?: (id: string | null) => void;
}): JSX.Element {
  const selectable = selected !== undefined && onToggle !== undefined;
  const allSelected = selectable && jobs.length > 0 && jobs.every((j) => selected.has(j.id));
  const columns = 7 + (selectable ? 1 : 0) + (onOpen ? 1 : 0);
  return (
    <div class="table-wrap">
      <table class="jobs-table">
        <thead><tr>
          {selectable ? <th><input type="checkbox" aria-label="Select all on this page" checked={allSelected} onChange={() => onToggle(jobs.map((j) => j.id), !allSelected)} /></th> : null}
          <th>Job</th><th>Queue</th><th>Status</th><th class="num">Priority</th><th class="num">Retries</th><th>Created</th><th>Finished</th>
          {onOpen ? <th class="actions"><span class="visually-hidden">Actions</span></th> : null}
        </tr></thead>
        <tbody>
          {jobs.map((job) => [
            <tr key={job.id} data-job-id={job.id}>
              {selectable ? <td><input type="checkbox" aria-label={`Select ${job.id}`} checked={selected.has(job.id)} onChange={() => onToggle([job.id], !selected.has(job.id))} /></td> : null}
              <td class="mono"><Link href={`/jobs/${job.id}`} title={job.id}>{shortId(job.id)}</Link></td>
              <td>{job.queue_name}</td>
              <td><StatusBadge status={job.status} /></td>
              <td class="num">{job.priority}</td>
              <td class="num">{job.retry_count}</td>
              <td title={formatTime(job.created_at)}>{formatRelative(job.created_at, now)}</td>
              <td title={formatTime(job.completed_at)}>{job.completed_at ? formatRelative(job.completed_at, now) : '—'}</td>
              {onOpen ? (
                <td class="actions">
                  <button type="button" aria-expanded={open === job.id} onClick={() => onOpen(open === job.id ? null : job.id)}>{open === job.id ? 'Hide' : 'Payload'}</button>
                </td>
              ) : null}
            </tr>,
            onOpen && open === job.id ? <tr key={`${job.id}-payload`} class="inspect-row"><td colSpan={columns}><PayloadPreview id={job.id} /></td></tr> : null,
          ])}
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
  const stats = useResource((signal) => api<JobStats>('GET', '/jobs/stats', { signal }).catch(() => null), []);
  useLiveRefresh(stats.reload, { when: (e) => e.type.startsWith('job.') && e.type !== 'job.progress' && e.type !== 'job.log', pollMs: 10_000, livePollMs: 10_000 });
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [open, setOpen] = useState<string | null>(null);
  const [pending, setPending] = useState<'retry' | 'cancel' | null>(null);
  const [byFilter, setByFilter] = useState<'retry' | 'cancel' | null>(null);
  useEffect(() => setSelected(new Set()), [queue, status, tag, page]);
  const list = jobs.data;
  const chosen = (list ?? []).filter((j) => selected.has(j.id));
  const toggle = (ids: string[], on: boolean) => {
    const next = new Set(selected);
    for (const id of ids) {
      if (on) next.add(id);
      else next.delete(id);
    }
    setSelected(next);
  };
  const applicable = (kind: 'retry' | 'cancel') => chosen.filter((j) => BULK[kind].applies.includes(j.status));
  return (
    <div class="page">
      <PageHeader title="Jobs" />
      <Filters queue={queue} status={status} tag={tag} />
      <StateCounts status={status} stats={stats.data ?? null} />
      {list && list.length > 0 ? (
        <div class="bulk-bar" role="toolbar" aria-label="Selected jobs">
          <span class="muted small">{chosen.length} selected</span>
          {(['retry', 'cancel'] as const).map((kind) => (
            <button key={kind} type="button" disabled={applicable(kind).length === 0} onClick={() => setPending(kind)}
              title={`${BULK[kind].label} applies to ${BULK[kind].applies.join(', ')} jobs`}>
              {BULK[kind].label} selected ({applicable(kind).length})
            </button>
          ))}
          {(['retry', 'cancel'] as const).map((kind) => (
            <button key={`all-${kind}`} type="button" disabled={status !== '' && !BULK[kind].applies.includes(status as JobStatus)} onClick={() => setByFilter(kind)}
              title={`${BULK[kind].label} every matching ${BULK[kind].applies.join(', ')} job, on every page`}>
              {BULK[kind].label} all matching…
            </button>
          ))}
        </div>
      ) : null}
      {!list ? (jobs.error ? <ErrorState error={jobs.error} what="Jobs" retry={jobs.reload} /> : <Loading />) : list.length === 0 ? (
        <EmptyState title={page > 1 ? 'No more jobs' : 'No jobs match'}>{queue || status || tag ? 'Try other filters.' : 'Enqueue a job with POST /api/v1/jobs and it shows up here.'}</EmptyState>
      ) : (
        <JobTable jobs={list} now={now} selected={selected} onToggle={toggle} open={open} onOpen={setOpen} />
      )}
      {pending ? (
        <ConfirmDialog
          title={`${BULK[pending].label} ${applicable(pending).length} job(s)?`}
          confirmLabel={BULK[pending].label}
          danger={pending === 'cancel'}
          onClose={() => setPending(null)}
          onConfirm={async () => {
            await runBulk(pending, applicable(pending));
            setSelected(new Set());
            jobs.reload();
            stats.reload();
          }}
        >
          <p>{BULK[pending].label} applies to {BULK[pending].applies.join(', ')} jobs{chosen.length > applicable(pending).length ? `; ${chosen.length - applicable(pending).length} other selected job(s) are left as they are` : ''}.</p>
        </ConfirmDialog>
      ) : null}
      {byFilter ? (
        <ByFilterDialog kind={byFilter} queue={queue} status={status} tag={tag} onClose={() => setByFilter(null)}
          onDone={() => { setSelected(new Set()); jobs.reload(); stats.reload(); }} />
      ) : null}
      <Pager page={page} hasNext={(list?.length ?? 0) === PAGE_SIZE} onPage={(p) => setQuery({ page: p === 1 ? null : p })} />
    </div>
  );
}
