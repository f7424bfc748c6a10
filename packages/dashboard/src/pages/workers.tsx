import type { JSX } from 'preact';
import { EmptyState, ErrorState, Facts, JsonBlock, Link, Loading, PageHeader, StatusBadge } from '../components/ui';
import { Modal } from '../components/dialog';
import { api } from '../lib/api';
import { formatRelative, formatTime, shortId } from '../lib/format';
import { useLiveRefresh, useNow, useResource } from '../lib/hooks';
import { setQuery } from '../lib/router';
import type { Worker, WorkerSummary } from '../lib/types';

/** A heartbeat older than this is shown as late (workers beat every 10 s by default). */
const LATE_MS = 30_000;

function WorkerDetail({ id }: { id: string }): JSX.Element {
  const worker = useResource((signal) => api<Worker>('GET', `/workers/${encodeURIComponent(id)}`, { signal }), [id]);
  const w = worker.data;
  return (
    <Modal title={w ? `Worker ${w.hostname}` : 'Worker'} onClose={() => setQuery({ id: null })} wide>
      {!w ? (worker.error ? <ErrorState error={worker.error} what="Workers" /> : <Loading />) : (
        <>
          <Facts items={[
            ['Id', <span class="mono">{w.id}</span>],
            ['Status', <StatusBadge status={w.status} />],
            ['Host', w.hostname],
            ['Queues', [w.queue_name, ...(w.queue_names ?? []).filter((q) => q !== w.queue_name)].join(', ')],
            ['Current jobs', `${w.current_jobs} of ${w.max_concurrency}`],
            ['Last heartbeat', formatTime(w.last_heartbeat)],
            ['Registered', formatTime(w.registered_at)],
            ['Type / version', `${w.worker_type ?? '—'} / ${w.version ?? '—'}`],
          ]} />
          <h3>Metadata</h3>
          <JsonBlock value={w.metadata} empty="None" />
          <p class="small"><Link href={`/jobs?queue=${encodeURIComponent(w.queue_name)}&status=processing`}>Jobs processing on {w.queue_name} →</Link></p>
        </>
      )}
    </Modal>
  );
}

export function Workers({ query }: { query: URLSearchParams }): JSX.Element {
  const workers = useResource((signal) => api<WorkerSummary[]>('GET', '/workers', { signal }), []);
  useLiveRefresh(workers.reload, { when: (e) => e.type.startsWith('worker.'), pollMs: 5000, livePollMs: 10_000 });
  const now = useNow(2000);
  const list = workers.data;
  const open = query.get('id');
  return (
    <div class="page">
      <PageHeader title="Workers" />
      {!list ? (workers.error ? <ErrorState error={workers.error} what="Workers" retry={workers.reload} /> : <Loading />) : list.length === 0 ? (
        <EmptyState title="No workers">Workers appear here when they register (POST /api/v1/workers/register or the SDK's worker).</EmptyState>
      ) : (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Worker</th><th>Id</th><th>Queue</th><th>Health</th><th class="num">Current jobs</th><th>Last heartbeat</th></tr></thead>
            <tbody>
              {list.map((w) => {
                const age = w.last_heartbeat ? now - Date.parse(w.last_heartbeat) : null;
                const late = w.status !== 'offline' && age !== null && age > LATE_MS;
                return (
                  <tr key={w.id} data-worker-id={w.id}>
                    <td><a href={`/workers?id=${encodeURIComponent(w.id)}`} onClick={(e) => { e.preventDefault(); setQuery({ id: w.id }); }}>{w.hostname}</a></td>
                    <td class="mono muted" title={w.id}>{shortId(w.id)}</td>
                    <td>{w.queue_name}</td>
                    <td><StatusBadge status={w.status} />{late ? <span class="badge badge-late" title="No heartbeat for a while">late</span> : null}</td>
                    <td class="num">
                      <meter min={0} max={w.max_concurrency} value={w.current_jobs} title={`${w.current_jobs} of ${w.max_concurrency}`} /> {w.current_jobs} / {w.max_concurrency}
                    </td>
                    <td title={formatTime(w.last_heartbeat)}>{formatRelative(w.last_heartbeat, now)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {open ? <WorkerDetail id={open} /> : null}
    </div>
  );
}
