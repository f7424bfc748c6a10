import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ConfirmDialog } from '../components/dialog';
import { notify } from '../components/toast';
import { EmptyState, ErrorState, JsonBlock, Link, Loading, PageHeader, Pager } from '../components/ui';
import { api, query } from '../lib/api';
import { formatRelative, formatTime, shortId } from '../lib/format';
import { useLiveRefresh, useNow, useResource } from '../lib/hooks';
import { setQuery } from '../lib/router';
import type { Job, JobStats, JobSummary } from '../lib/types';
import { PacedReplayDialog, ReplayList } from './dlq-replays';

const PAGE_SIZE = 50;
/** The contract replays at most 100 jobs per call (docs/compatibility.md §3.6). */
const REPLAY_BATCH = 100;
const REPLAY_ALL_MAX_ROUNDS = 1000;

/** A DLQ row: Spool adds why the job was dead-lettered (other servers may not). */
type DeadLetter = JobSummary & { last_error?: string | null };

type Pending =
  | { kind: 'one'; id: string }
  | { kind: 'selected'; ids: string[] }
  | { kind: 'all' }
  | { kind: 'purge' };

function Inspect({ id }: { id: string }): JSX.Element {
  const job = useResource((signal) => api<Job>('GET', `/jobs/${encodeURIComponent(id)}`, { signal }), [id]);
  if (!job.data) return job.error ? <ErrorState error={job.error} what="Jobs" /> : <Loading />;
  const j = job.data;
  return (
    <div class="inspect">
      <div>
        <h3>Last error</h3>
        {j.last_error ? <pre class="error-text">{j.last_error}</pre> : <p class="muted">None recorded</p>}
      </div>
      <div>
        <h3>Payload</h3>
        <JsonBlock value={j.payload} />
      </div>
      <p class="small"><Link href={`/jobs/${j.id}`}>Open the job and its history →</Link></p>
    </div>
  );
}

/** Replays in batches of 100 until the dead-letter queue (of one queue, or all) is empty. */
async function replayAll(queue: string): Promise<number> {
  let total = 0;
  for (let round = 0; round < REPLAY_ALL_MAX_ROUNDS; round++) {
    const result = await api<{ retried_count: number }>('POST', '/jobs/dlq/retry', { body: { ...(queue ? { queue_name: queue } : {}), limit: REPLAY_BATCH } });
    total += result.retried_count;
    if (result.retried_count < REPLAY_BATCH) break;
  }
  return total;
}

function ConfirmAction({ pending, queue, total, onClose, onDone }: { pending: Pending; queue: string; total: number | null; onClose: () => void; onDone: () => void }): JSX.Element {
  const scope = queue ? <>in <strong>{queue}</strong></> : <>in every queue</>;
  if (pending.kind === 'purge') {
    return (
      <ConfirmDialog title="Purge dead letters?" confirmLabel="Purge" danger onClose={onClose} onConfirm={async () => {
        const result = await api<{ purged_count: number }>('POST', '/jobs/dlq/purge', { body: { ...(queue ? { queue_name: queue } : {}), confirm: true } });
        notify(`Purged ${result.purged_count} dead-lettered job${result.purged_count === 1 ? '' : 's'}`);
        onDone();
      }}>
        <p>Deletes the dead-lettered jobs {scope} for good{total !== null && !queue ? ` (${total})` : ''}. This cannot be undone.</p>
      </ConfirmDialog>
    );
  }
  const ids = pending.kind === 'one' ? [pending.id] : pending.kind === 'selected' ? pending.ids : null;
  const text = ids ? `${ids.length} job${ids.length === 1 ? '' : 's'}` : <>all dead-lettered jobs {scope}{total !== null && !queue ? ` (${total})` : ''}</>;
  return (
    <ConfirmDialog title="Replay dead letters?" confirmLabel="Replay" onClose={onClose} onConfirm={async () => {
      const count = ids
        ? (await api<{ retried_count: number }>('POST', '/jobs/dlq/retry', { body: { job_ids: ids } })).retried_count
        : await replayAll(queue);
      notify(`Replayed ${count} job${count === 1 ? '' : 's'}: pending again with a fresh retry budget`);
      onDone();
    }}>
      <p>Replay {text}? {ids?.length === 1 ? 'It goes' : 'They go'} back to <strong>pending</strong> with the retry count reset, and can be claimed at once.</p>
    </ConfirmDialog>
  );
}

export function DeadLetters({ query: q }: { query: URLSearchParams }): JSX.Element {
  const queue = q.get('queue') ?? '';
  const page = Math.max(1, Number.parseInt(q.get('page') ?? '1', 10) || 1);
  const now = useNow(5000);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [open, setOpen] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending | null>(null);
  const [queueInput, setQueueInput] = useState(queue);
  const [pacing, setPacing] = useState(false);
  const [replays, setReplays] = useState(0);
  useEffect(() => setQueueInput(queue), [queue]);
  useEffect(() => setSelected(new Set()), [queue, page]);

  const list = useResource((signal) => api<DeadLetter[]>('GET', `/jobs/dlq${query({ queue_name: queue, limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE })}`, { signal }), [queue, page]);
  const stats = useResource((signal) => api<JobStats>('GET', '/jobs/stats', { signal }).catch(() => null), []);
  const reload = () => {
    list.reload();
    stats.reload();
  };
  useLiveRefresh(reload, { when: (e) => e.type === 'job.failed' || (e.type === 'job.status_changed' && (e.data.new_status === 'deadletter' || e.data.old_status === 'deadletter')), pollMs: 10_000 }, [queue, page]);

  const rows = list.data ?? [];
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const allSelected = rows.length > 0 && rows.every((r) => selected.has(r.id));
  const total = stats.data?.deadletter ?? null;

  return (
    <div class="page">
      <PageHeader title="Dead letters">
        <button type="button" disabled={selected.size === 0} onClick={() => setPending({ kind: 'selected', ids: [...selected] })}>Replay selected ({selected.size})</button>
        <button type="button" disabled={rows.length === 0} onClick={() => setPending({ kind: 'all' })}>Replay all</button>
        <button type="button" disabled={rows.length === 0} onClick={() => setPacing(true)}>Replay all (paced)</button>
        <button type="button" class="danger" disabled={rows.length === 0} onClick={() => setPending({ kind: 'purge' })}>Purge</button>
      </PageHeader>
      <form class="filter-row" onSubmit={(e) => { e.preventDefault(); setQuery({ queue: queueInput.trim(), page: null }); }}>
        <label>Queue<input name="queue" value={queueInput} placeholder="any" onInput={(e) => setQueueInput((e.target as HTMLInputElement).value)} /></label>
        <button type="submit">Filter</button>
        {total !== null ? <span class="muted">{total} dead-lettered in all queues</span> : null}
      </form>
      {!list.data ? (list.error ? <ErrorState error={list.error} what="Dead letters" retry={list.reload} /> : <Loading />) : rows.length === 0 ? (
        <EmptyState title="No dead letters">{queue ? `Nothing dead-lettered in ${queue}.` : 'Jobs that run out of retries land here.'}</EmptyState>
      ) : (
        <div class="table-wrap">
          <table class="dlq-table">
            <thead>
              <tr>
                <th><input type="checkbox" aria-label="Select all on this page" checked={allSelected} onChange={() => setSelected(allSelected ? new Set() : new Set(rows.map((r) => r.id)))} /></th>
                <th>Job</th><th>Queue</th><th>Error</th><th class="num">Retries</th><th>Created</th><th>Dead since</th><th class="actions"><span class="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {rows.map((job) => [
                <tr key={job.id} data-job-id={job.id}>
                  <td><input type="checkbox" aria-label={`Select ${job.id}`} checked={selected.has(job.id)} onChange={() => toggle(job.id)} /></td>
                  <td class="mono"><Link href={`/jobs/${job.id}`} title={job.id}>{shortId(job.id)}</Link></td>
                  <td>{job.queue_name}</td>
                  <td class="error-cell" title={job.last_error ?? undefined}>{job.last_error ?? <span class="muted">—</span>}</td>
                  <td class="num">{job.retry_count}</td>
                  <td title={formatTime(job.created_at)}>{formatRelative(job.created_at, now)}</td>
                  <td title={formatTime(job.completed_at)}>{formatRelative(job.completed_at, now)}</td>
                  <td class="actions">
                    <button type="button" aria-expanded={open === job.id} onClick={() => setOpen(open === job.id ? null : job.id)}>{open === job.id ? 'Hide' : 'Inspect'}</button>
                    <button type="button" onClick={() => setPending({ kind: 'one', id: job.id })}>Replay</button>
                  </td>
                </tr>,
                open === job.id ? <tr key={`${job.id}-inspect`} class="inspect-row"><td colSpan={8}><Inspect id={job.id} /></td></tr> : null,
              ])}
            </tbody>
          </table>
        </div>
      )}
      <Pager page={page} hasNext={rows.length === PAGE_SIZE} onPage={(p) => setQuery({ page: p === 1 ? null : p })} />
      <ReplayList bump={replays} />
      {pacing ? <PacedReplayDialog queue={queue} total={total} onClose={() => setPacing(false)} onStarted={() => { setReplays((n) => n + 1); reload(); }} /> : null}
      {pending ? <ConfirmAction pending={pending} queue={queue} total={total} onClose={() => setPending(null)} onDone={() => { setSelected(new Set()); reload(); }} /> : null}
    </div>
  );
}
