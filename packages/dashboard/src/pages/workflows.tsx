import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { Dag } from '../components/dag';
import { ConfirmDialog } from '../components/dialog';
import { notify } from '../components/toast';
import { EmptyState, ErrorState, Facts, Link, Loading, PageHeader, Pager, StatusBadge } from '../components/ui';
import { api, query } from '../lib/api';
import { formatRelative, formatTime } from '../lib/format';
import { useLiveRefresh, useNow, useResource } from '../lib/hooks';
import { setQuery } from '../lib/router';
import type { Workflow, WorkflowJob } from '../lib/types';

const PAGE_SIZE = 50;
const WORKFLOW_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'];

function Progress({ w }: { w: Workflow }): JSX.Element {
  return (
    <span class="progress" title={`${w.completed_jobs} of ${w.total_jobs} completed, ${w.failed_jobs} failed`}>
      <progress max={100} value={w.progress_percent} /> {Math.round(w.progress_percent)} %
    </span>
  );
}

export function Workflows({ query: q }: { query: URLSearchParams }): JSX.Element {
  const status = q.get('status') ?? '';
  const page = Math.max(1, Number.parseInt(q.get('page') ?? '1', 10) || 1);
  const now = useNow(5000);
  const workflows = useResource((signal) => api<Workflow[]>('GET', `/workflows${query({ status, limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE })}`, { signal }), [status, page]);
  useLiveRefresh(workflows.reload, { pollMs: 10_000, livePollMs: 10_000 }, [status, page]);
  const list = workflows.data;
  return (
    <div class="page">
      <PageHeader title="Workflows" />
      <div class="filter-row">
        <label>Status
          <select value={status} onChange={(e) => setQuery({ status: (e.target as HTMLSelectElement).value, page: null })}>
            <option value="">any</option>
            {WORKFLOW_STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
      </div>
      {!list ? (workflows.error ? <ErrorState error={workflows.error} what="Workflows" retry={workflows.reload} /> : <Loading />) : list.length === 0 ? (
        <EmptyState title="No workflows">Create one with POST /api/v1/workflows: jobs with keys and depends_on.</EmptyState>
      ) : (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Name</th><th>Status</th><th>Progress</th><th class="num">Jobs</th><th>Created</th></tr></thead>
            <tbody>
              {list.map((w) => (
                <tr key={w.id}>
                  <td><Link href={`/workflows/${w.id}`}>{w.name}</Link></td>
                  <td><StatusBadge status={w.status} /></td>
                  <td><Progress w={w} /></td>
                  <td class="num">{w.total_jobs}</td>
                  <td title={formatTime(w.created_at)}>{formatRelative(w.created_at, now)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager page={page} hasNext={(list?.length ?? 0) === PAGE_SIZE} onPage={(p) => setQuery({ page: p === 1 ? null : p })} />
    </div>
  );
}

export function WorkflowDetail({ id }: { id: string }): JSX.Element {
  const workflow = useResource((signal) => api<Workflow>('GET', `/workflows/${encodeURIComponent(id)}`, { signal }), [id]);
  const jobs = useResource((signal) => api<WorkflowJob[]>('GET', `/workflows/${encodeURIComponent(id)}/jobs`, { signal }), [id]);
  const [confirm, setConfirm] = useState<'cancel' | 'retry' | null>(null);
  const reload = () => {
    workflow.reload();
    jobs.reload();
  };
  const ids = new Set((jobs.data ?? []).map((j) => j.id));
  useLiveRefresh(reload, { when: (e) => typeof e.data.job_id === 'string' && ids.has(e.data.job_id) && e.type !== 'job.progress' && e.type !== 'job.log', pollMs: 5000 }, [id, ids.size]);
  const w = workflow.data;
  if (!w) return <div class="page">{workflow.error ? <ErrorState error={workflow.error} what="Workflows" retry={reload} /> : <Loading />}</div>;
  const active = w.status === 'pending' || w.status === 'running';
  return (
    <div class="page">
      <PageHeader title={w.name}>
        <StatusBadge status={w.status} />
        {w.status === 'failed' ? <button type="button" class="primary" onClick={() => setConfirm('retry')}>Retry failed jobs</button> : null}
        {active ? <button type="button" class="danger" onClick={() => setConfirm('cancel')}>Cancel workflow</button> : null}
      </PageHeader>
      <section class="card">
        <Facts items={[
          ['Progress', <Progress w={w} />],
          ['Jobs', `${w.completed_jobs} completed · ${w.failed_jobs} failed · ${w.total_jobs} total`],
          ['Created', formatTime(w.created_at)],
          ['Started', formatTime(w.started_at)],
          ['Finished', formatTime(w.completed_at)],
          ['Description', w.description],
        ]} />
      </section>
      <section class="card">
        <h2>Graph</h2>
        {jobs.data ? <Dag jobs={jobs.data} /> : jobs.error ? <ErrorState error={jobs.error} what="Workflow jobs" /> : <Loading />}
        <p class="muted small">Click a job to open it. Arrows point from a dependency to the job waiting for it.</p>
      </section>
      {confirm ? (
        <ConfirmDialog
          title={confirm === 'cancel' ? 'Cancel this workflow?' : 'Retry this workflow?'}
          confirmLabel={confirm === 'cancel' ? 'Cancel workflow' : 'Retry'}
          danger={confirm === 'cancel'}
          onClose={() => setConfirm(null)}
          onConfirm={async () => {
            await api('POST', `/workflows/${w.id}/${confirm}`);
            notify(confirm === 'cancel' ? 'Workflow cancelled' : 'Failed jobs are pending again');
            reload();
          }}
        >
          <p>{confirm === 'cancel' ? 'Its pending jobs are cancelled; running jobs finish.' : 'Its failed and dead-lettered jobs go back to pending and the workflow runs again.'}</p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}
