import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ConfirmDialog } from '../components/dialog';
import { notify, notifyError } from '../components/toast';
import { ErrorState, Facts, JsonBlock, Link, Loading, PageHeader, StatusBadge } from '../components/ui';
import { WorkerName } from '../components/worker-name';
import { api, ApiError, errorMessage } from '../lib/api';
import { formatDuration, formatRelative, formatTime, shortId } from '../lib/format';
import { useLiveRefresh, useNow, useResource } from '../lib/hooks';
import type { HistoryEntry, Job } from '../lib/types';

const EVENT_LABELS: Record<string, string> = {
  create: 'Enqueued',
  promote: 'Became due',
  claim: 'Claimed by a worker',
  complete: 'Completed',
  fail_retry: 'Failed; will retry',
  fail_final: 'Failed; out of retries',
  lease_expired: 'Lease expired',
  cancel: 'Cancelled',
  cancel_requested: 'Cancellation requested',
  retry: 'Retried',
  release: 'Released by its worker',
  expire: 'Expired',
  purge: 'Purged',
};

function Timeline({ id, reloadKey }: { id: string; reloadKey: string }): JSX.Element {
  const history = useResource((signal) => api<HistoryEntry[]>('GET', `/jobs/${encodeURIComponent(id)}/history`, { signal }), [id]);
  const seen = useRef(reloadKey);
  useEffect(() => {
    if (seen.current === reloadKey) return;
    seen.current = reloadKey;
    history.reload();
  }, [reloadKey]);
  if (!history.data) return history.error ? <ErrorState error={history.error} what="Job histories" /> : <Loading />;
  if (history.data.length === 0) return <p class="muted">No recorded transitions.</p>;
  const first = Date.parse(history.data[0]!.created_at);
  return (
    <ol class="timeline" data-testid="timeline">
      {history.data.map((h) => (
        <li key={h.id} class={`timeline-item timeline-${h.to_status ?? 'none'}`} data-event={h.event}>
          <div class="timeline-head">
            <strong>{EVENT_LABELS[h.event] ?? h.event}</strong>
            {h.from_status !== h.to_status && h.to_status ? <span class="muted"> {h.from_status ?? '∅'} → <StatusBadge status={h.to_status} /></span> : null}
          </div>
          <div class="muted small">
            {formatTime(h.created_at)} · +{formatDuration(Date.parse(h.created_at) - first)}
            {h.worker_id ? <> · worker <WorkerName id={h.worker_id} /></> : null}
          </div>
          {h.message ? <pre class="timeline-message">{h.message}</pre> : null}
        </li>
      ))}
    </ol>
  );
}

function PriorityForm({ job, onDone }: { job: Job; onDone: () => void }): JSX.Element {
  const [value, setValue] = useState(String(job.priority));
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      await api('PUT', `/jobs/${job.id}/priority`, { body: { priority: Number(value) } });
      notify(`Priority set to ${value}`);
      onDone();
    } catch (err) {
      notifyError('Could not change the priority', err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="inline-form" onSubmit={submit}>
      <label>Priority<input type="number" min={-100} max={100} step={1} value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} /></label>
      <button type="submit" disabled={busy || value === String(job.priority) || value.trim() === ''}>Set</button>
    </form>
  );
}

function Actions({ job, reload }: { job: Job; reload: () => void }): JSX.Element {
  const [confirm, setConfirm] = useState<'cancel' | 'retry' | null>(null);
  const cancellable = job.status === 'pending' || job.status === 'scheduled' || job.status === 'processing';
  const retryable = job.status === 'failed' || job.status === 'deadletter';
  return (
    <div class="page-actions">
      {job.status === 'pending' || job.status === 'scheduled' ? <PriorityForm job={job} onDone={reload} /> : null}
      {retryable ? <button type="button" class="primary" onClick={() => setConfirm('retry')}>Retry now</button> : null}
      {cancellable ? <button type="button" class="danger" onClick={() => setConfirm('cancel')}>Cancel job</button> : null}
      {confirm === 'retry' ? (
        <ConfirmDialog title="Retry this job?" confirmLabel="Retry" onClose={() => setConfirm(null)} onConfirm={async () => {
          await api('POST', `/jobs/${job.id}/retry`);
          notify('The job is pending again');
          reload();
        }}>
          <p>The job goes back to <strong>pending</strong> on {job.queue_name} and can be claimed at once.</p>
        </ConfirmDialog>
      ) : null}
      {confirm === 'cancel' ? (
        <ConfirmDialog title="Cancel this job?" confirmLabel="Cancel job" danger onClose={() => setConfirm(null)} onConfirm={async () => {
          try {
            await api('DELETE', `/jobs/${job.id}`);
            notify('Job cancelled');
          } catch (err) {
            if (!(err instanceof ApiError && (err.details as { cancel_requested?: boolean } | null)?.cancel_requested)) throw err;
            notify('The job is running: its worker is told to stop at its next heartbeat');
          }
          reload();
        }}>
          <p>{job.status === 'processing' ? 'The job is running: Spool asks its worker to stop.' : 'The job will not run.'}</p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

export function JobDetail({ id }: { id: string }): JSX.Element {
  const job = useResource((signal) => api<Job>('GET', `/jobs/${encodeURIComponent(id)}`, { signal }), [id]);
  useLiveRefresh(job.reload, { when: (e) => e.data.job_id === id, pollMs: 5000 }, [id]);
  const now = useNow(5000);
  const j = job.data;
  if (!j) {
    if (job.error instanceof ApiError && job.error.status === 404 && !job.error.missingEndpoint) {
      return <div class="page"><PageHeader title="Job not found" /><p class="muted">No job with id <span class="mono">{id}</span> in this organization. <Link href="/jobs">Back to jobs</Link></p></div>;
    }
    return <div class="page">{job.error ? <ErrorState error={job.error} what="Jobs" retry={job.reload} /> : <Loading />}</div>;
  }
  return (
    <div class="page">
      <PageHeader title={`Job ${shortId(j.id)}`}>
        <StatusBadge status={j.status} />
      </PageHeader>
      <Actions job={j} reload={job.reload} />
      <div class="detail-grid">
        <section class="card">
          <h2>Details</h2>
          <Facts items={[
            ['Id', <span class="mono">{j.id}</span>],
            ['Queue', <Link href={`/jobs?queue=${encodeURIComponent(j.queue_name)}`}>{j.queue_name}</Link>],
            ['Priority', j.priority],
            ['Attempts', `${j.retry_count} retries of ${j.max_retries}`],
            ['Timeout', `${j.timeout_seconds} s`],
            ['Created', formatTime(j.created_at)],
            ['Scheduled', j.scheduled_at ? `${formatTime(j.scheduled_at)} (${formatRelative(j.scheduled_at, now)})` : null],
            ['Started', formatTime(j.started_at)],
            ['Finished', formatTime(j.completed_at)],
            ['Expires', j.expires_at ? formatTime(j.expires_at) : null],
            ['Idempotency key', j.idempotency_key ? <span class="mono">{j.idempotency_key}</span> : null],
            ['Workflow', j.workflow_id ? <Link href={`/workflows/${j.workflow_id}`} class="mono">{shortId(j.workflow_id)}</Link> : null],
          ]} />
        </section>
        <section class="card">
          <h2>Lease</h2>
          <Facts items={[
            ['Worker', j.assigned_worker_id ? <WorkerName id={j.assigned_worker_id} /> : null],
            ['Lease id', j.lease_id ? <span class="mono">{j.lease_id}</span> : null],
            ['Lease expires', j.lease_expires_at ? `${formatTime(j.lease_expires_at)} (${formatRelative(j.lease_expires_at, now)})` : null],
          ]} />
          <h2>Last error</h2>
          {j.last_error ? <pre class="error-text" data-testid="last-error">{j.last_error}</pre> : <p class="muted">None</p>}
        </section>
      </div>
      <div class="detail-grid">
        <section class="card"><h2>Payload</h2><JsonBlock value={j.payload} /></section>
        <section class="card"><h2>Result</h2><JsonBlock value={j.result} empty="No result" /></section>
      </div>
      {j.tags ? <section class="card"><h2>Tags</h2><JsonBlock value={j.tags} /></section> : null}
      <section class="card">
        <h2>History</h2>
        <Timeline id={j.id} reloadKey={`${j.status}:${j.updated_at}`} />
      </section>
      {job.error ? <p class="form-error">Refresh failed: {errorMessage(job.error)}</p> : null}
    </div>
  );
}
