import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ConfirmDialog, Modal } from '../components/dialog';
import { notify, notifyError } from '../components/toast';
import { ErrorState, Facts, JsonBlock, Link, Loading, PageHeader, StatusBadge } from '../components/ui';
import { WorkerName } from '../components/worker-name';
import { api, ApiError, errorMessage } from '../lib/api';
import { formatCountOf, formatDuration, formatRelative, formatTime, shortId } from '../lib/format';
import { onLiveEvent } from '../lib/events';
import { useLiveRefresh, useNow, useResource } from '../lib/hooks';
import type { HistoryEntry, Job, JobExplanation, JobLogLine, JobProgress } from '../lib/types';

/** Events that report on a running job without changing it: the page updates its progress and log from them. */
const REPORT_EVENTS = new Set(['job.progress', 'job.log']);
/** The server keeps at most this many lines per job. */
const LOG_LINES_MAX = 1000;

const EVENT_LABELS: Record<string, string> = {
  create: 'Enqueued',
  promote: 'Became due',
  claim: 'Claimed by a worker',
  complete: 'Completed',
  fail_retry: 'Failed; will retry',
  fail_final: 'Failed; out of retries',
  lease_expired: 'Lease expired',
  timeout: 'Timed out (ended by the server)',
  cancel: 'Cancelled',
  cancel_requested: 'Cancellation requested',
  retry: 'Retried',
  release: 'Released by its worker',
  snooze: 'Snoozed by its worker (no attempt used)',
  expire: 'Expired',
  purge: 'Purged',
  edit: 'Edited',
  debounce: 'Debounced by a later enqueue of its key',
  replace: 'Replaced by a later enqueue of its key',
};

/** How the job's key treats later enqueues of it (docs/jobs-api.md, "Job keys"). */
const KEY_MODES: Record<string, string> = {
  dedupe: 'dedupe: later enqueues return this job while it waits or runs',
  debounce: 'debounce: later enqueues replace its payload and push its run time',
  throttle: 'throttle: one job per window',
  replace: 'replace: later enqueues replace its payload and options while it waits',
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
          {h.details?.replay_id ? <div class="muted small" data-testid="timeline-replay">by DLQ replay <span class="mono" title={h.details.replay_id}>{shortId(h.details.replay_id)}</span></div> : null}
          {h.details?.fields?.length ? <div class="muted small" data-testid="timeline-changes">changed {h.details.fields.join(', ')}</div> : null}
          {h.actor ? <div class="muted small">by <span class="mono">{h.actor}</span></div> : null}
        </li>
      ))}
    </ol>
  );
}

/**
 * The worker's reports (extension): progress and log lines, read once and
 * then kept current from the job.progress and job.log events. A server
 * without the endpoints shows nothing.
 */
function Reports({ id, running }: { id: string; running: boolean }): JSX.Element | null {
  const [progress, setProgress] = useState<JobProgress | null>(null);
  const [lines, setLines] = useState<JobLogLine[]>([]);
  const [missing, setMissing] = useState(false);
  const logEnd = useRef<HTMLPreElement | null>(null);

  useEffect(() => {
    const abort = new AbortController();
    let lastSeq = 0;
    let reading = false;
    let again = false;
    setProgress(null);
    setLines([]);
    setMissing(false);
    const unsupported = (err: unknown) => {
      if (err instanceof ApiError && err.missingEndpoint) setMissing(true);
      else if (!abort.signal.aborted) notifyError('Could not read the job\'s log', err);
    };
    // One read at a time from the last line seen; events during a read ask for one more.
    const readLog = async () => {
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      try {
        do {
          again = false;
          const answer = await api<{ lines: JobLogLine[] }>('GET', `/jobs/${encodeURIComponent(id)}/logs?after=${lastSeq}`, { signal: abort.signal });
          if (answer.lines.length > 0) {
            lastSeq = answer.lines[answer.lines.length - 1]!.seq;
            setLines((old) => [...old, ...answer.lines].slice(-LOG_LINES_MAX));
          }
        } while (again && !abort.signal.aborted);
      } catch (err) {
        unsupported(err);
      } finally {
        reading = false;
      }
    };
    const unsubscribe = onLiveEvent((event) => {
      if (event.data.job_id !== id) return;
      if (event.type === 'job.progress') {
        const d = event.data;
        setProgress({ percent: (d.percent as number | null) ?? null, message: (d.message as string | null) ?? null, metadata: d.metadata ?? null, updated_at: String(d.timestamp ?? new Date().toISOString()) });
      } else if (event.type === 'job.log') void readLog();
    });
    api<{ progress: JobProgress | null }>('GET', `/jobs/${encodeURIComponent(id)}/progress`, { signal: abort.signal }).then(
      (answer) => setProgress((live) => live ?? answer.progress),
      unsupported,
    );
    void readLog();
    return () => {
      unsubscribe();
      abort.abort();
    };
  }, [id]);

  useEffect(() => {
    const el = logEnd.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [lines.length]);

  if (missing) return null;
  const percent = progress?.percent ?? null;
  return (
    <section class="card" data-testid="job-reports">
      <h2>Progress</h2>
      {progress ? (
        <div class="job-progress">
          {percent !== null ? (
            <div class="progress-bar" role="progressbar" aria-label="Job progress" aria-valuemin={0} aria-valuemax={100} aria-valuenow={percent}>
              <div class="progress-fill" style={{ width: `${percent}%` }} />
            </div>
          ) : null}
          <div class="progress-text">
            {percent !== null ? <strong data-testid="progress-percent">{Number.isInteger(percent) ? percent : percent.toFixed(1)} %</strong> : null}
            {progress.message ? <span data-testid="progress-message">{progress.message}</span> : null}
            <span class="muted small">updated {formatTime(progress.updated_at)}</span>
          </div>
          {progress.metadata !== null && progress.metadata !== undefined ? <JsonBlock value={progress.metadata} /> : null}
        </div>
      ) : <p class="muted">{running ? 'The worker has not reported progress.' : 'No progress was reported.'}</p>}
      <h2>Log</h2>
      {lines.length > 0 ? (
        <pre class="job-log" data-testid="job-log" ref={logEnd}>
          {lines.map((l) => <div key={l.seq} class="job-log-line" title={formatTime(l.at)}>{l.line || ' '}</div>)}
        </pre>
      ) : <p class="muted">{running ? 'No log lines yet.' : 'No log lines.'}</p>}
      {lines.length >= LOG_LINES_MAX ? <p class="muted small">The newest {LOG_LINES_MAX} lines are kept.</p> : null}
    </section>
  );
}

/** Short labels for the explanation's reason codes; unknown codes show as they are. */
const REASON_LABELS: Record<string, string> = {
  queue_paused: 'Queue paused',
  scheduled: 'Scheduled',
  debounced: 'Debounced',
  in_backoff: 'Retry backoff',
  snoozed: 'Snoozed',
  rate_limited: 'Rate limited',
  concurrency_limit: 'Concurrency limit',
  concurrency_key_full: 'Key at its limit',
  dependencies_pending: 'Waiting for dependencies',
  blocked_by_failed_dependency: 'Dependency failed',
  expired: 'Expired',
  no_live_workers: 'No live workers',
  queued_behind: 'In line',
  not_claimable: 'Not claimable',
};

/**
 * "Why isn't it running?" for a job that waits (extension: GET
 * /jobs/{id}/explain): read again when the job changes, when its queue is
 * paused or resumed, and every 10 s while live (rate and concurrency limits
 * change with other jobs). A server without the endpoint shows nothing.
 */
function Explanation({ job, now }: { job: Job; now: number }): JSX.Element | null {
  const explanation = useResource((signal) => api<JobExplanation>('GET', `/jobs/${encodeURIComponent(job.id)}/explain`, { signal }), [job.id]);
  const changed = `${job.status}:${job.updated_at}`;
  const seen = useRef(changed);
  useEffect(() => {
    if (seen.current === changed) return;
    seen.current = changed;
    explanation.reload();
  }, [changed]);
  useLiveRefresh(explanation.reload, {
    when: (e) => e.data.job_id === job.id || ((e.type === 'queue.paused' || e.type === 'queue.resumed') && e.data.queue_name === job.queue_name),
    livePollMs: 10_000,
    pollMs: 10_000,
  }, [job.id, job.queue_name]);
  const e = explanation.data;
  if (!e) {
    if (explanation.error instanceof ApiError && explanation.error.missingEndpoint) return null;
    return <section class="card" data-testid="job-explain"><h2>Why isn't it running?</h2>{explanation.error ? <ErrorState error={explanation.error} what="The explanation" retry={explanation.reload} /> : <Loading />}</section>;
  }
  return (
    <section class="card" data-testid="job-explain" data-runnable={String(e.runnable)}>
      <h2>Why isn't it running?</h2>
      <p class={e.runnable ? 'explain-summary explain-runnable' : 'explain-summary'}>
        {e.runnable ? 'A claim on its queue can take it now.' : 'No claim can take it right now.'}
      </p>
      <ul class="explain-reasons">
        {e.reasons.map((r) => (
          <li key={r.code} data-code={r.code} class={r.blocking ? 'explain-blocking' : 'explain-hint'}>
            <span class={`badge ${r.blocking ? 'badge-failed' : 'badge-pending'}`}>{REASON_LABELS[r.code] ?? r.code}</span>
            <span class="explain-message">{r.message}</span>
            {r.until ? <span class="muted small explain-until" data-testid="explain-until">until {formatTime(r.until)} ({formatRelative(r.until, now)})</span> : null}
          </li>
        ))}
      </ul>
      <p class="muted small">Checked {formatTime(e.checked_at)}</p>
    </section>
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

/** The statuses PATCH /jobs/{id} accepts. */
const EDITABLE = new Set(['pending', 'scheduled', 'deadletter', 'failed']);

/** Extension: edits payload, priority, max_retries and queue (PATCH /jobs/{id}); only what changed is sent. */
function EditDialog({ job, onClose, onDone }: { job: Job; onClose: () => void; onDone: () => void }): JSX.Element {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const body: Record<string, unknown> = {};
    const text = String(form.get('payload') ?? '');
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      setError('Payload is not valid JSON');
      return;
    }
    if (JSON.stringify(payload) !== JSON.stringify(job.payload)) body.payload = payload;
    const priority = Number(form.get('priority'));
    if (priority !== job.priority) body.priority = priority;
    const maxRetries = Number(form.get('max_retries'));
    if (maxRetries !== job.max_retries) body.max_retries = maxRetries;
    const queue = String(form.get('queue_name') ?? '').trim();
    if (queue !== job.queue_name) body.queue_name = queue;
    if (Object.keys(body).length === 0) {
      onClose();
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api('PATCH', `/jobs/${job.id}`, { body });
      notify(job.status === 'deadletter' ? 'Job edited; it stays dead-lettered until you retry it' : 'Job edited');
      onDone();
      onClose();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <Modal title="Edit this job" onClose={onClose} wide>
      <form class="form" onSubmit={submit} data-testid="edit-job">
        <label>Payload (JSON)<textarea name="payload" class="mono" rows={8} defaultValue={JSON.stringify(job.payload, null, 2)} /></label>
        <div class="form-row">
          <label>Priority<input name="priority" type="number" min={-100} max={100} step={1} required defaultValue={String(job.priority)} /></label>
          <label>Max retries<input name="max_retries" type="number" min={0} max={100} step={1} required defaultValue={String(job.max_retries)} /></label>
          <label>Queue<input name="queue_name" required maxLength={100} defaultValue={job.queue_name} /></label>
        </div>
        {job.status === 'deadletter' || job.status === 'failed' ? <p class="muted small">The job stays {job.status === 'failed' ? 'failed' : 'dead-lettered'}: retry it afterwards to run the edited job.</p> : null}
        {error ? <p class="form-error" role="alert">{error}</p> : null}
        <div class="form-actions">
          <button type="button" onClick={onClose} disabled={busy}>Cancel</button>
          <button type="submit" class="primary" disabled={busy}>{busy ? 'Saving…' : 'Save'}</button>
        </div>
      </form>
    </Modal>
  );
}

function Actions({ job, reload }: { job: Job; reload: () => void }): JSX.Element {
  const [confirm, setConfirm] = useState<'cancel' | 'retry' | 'edit' | null>(null);
  const cancellable = job.status === 'pending' || job.status === 'scheduled' || job.status === 'processing';
  const retryable = job.status === 'failed' || job.status === 'deadletter';
  return (
    <div class="page-actions">
      {job.status === 'pending' || job.status === 'scheduled' ? <PriorityForm job={job} onDone={reload} /> : null}
      {EDITABLE.has(job.status) ? <button type="button" onClick={() => setConfirm('edit')}>Edit</button> : null}
      {retryable ? <button type="button" class="primary" onClick={() => setConfirm('retry')}>Retry now</button> : null}
      {confirm === 'edit' ? <EditDialog job={job} onClose={() => setConfirm(null)} onDone={reload} /> : null}
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
  useLiveRefresh(job.reload, { when: (e) => e.data.job_id === id && !REPORT_EVENTS.has(e.type), pollMs: 5000 }, [id]);
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
      {j.status === 'pending' || j.status === 'scheduled' ? <Explanation job={j} now={now} /> : null}
      <div class="detail-grid">
        <section class="card">
          <h2>Details</h2>
          <Facts items={[
            ['Id', <span class="mono">{j.id}</span>],
            ['Queue', <Link href={`/jobs?queue=${encodeURIComponent(j.queue_name)}`}>{j.queue_name}</Link>],
            ['Priority', j.priority],
            ['Attempts', `${formatCountOf(j.retry_count, 'retry', 'retries')} of ${j.max_retries}`],
            ['Timeout', `${j.timeout_seconds} s`],
            ['Created', formatTime(j.created_at)],
            ['Scheduled', j.scheduled_at ? `${formatTime(j.scheduled_at)} (${formatRelative(j.scheduled_at, now)})` : null],
            ['Started', formatTime(j.started_at)],
            ['Finished', formatTime(j.completed_at)],
            ['Expires', j.expires_at ? formatTime(j.expires_at) : null],
            ['Idempotency key', j.idempotency_key ? <span class="mono">{j.idempotency_key}</span> : null],
            ['Job key', j.job_key ? <span data-testid="job-key"><span class="mono">{j.job_key}</span> <span class="muted">({KEY_MODES[j.job_key_mode ?? ''] ?? j.job_key_mode})</span></span> : null],
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
      <Reports id={j.id} running={j.status === 'processing'} />
      {j.tags ? <section class="card"><h2>Tags</h2><JsonBlock value={j.tags} /></section> : null}
      <section class="card">
        <h2>History</h2>
        <Timeline id={j.id} reloadKey={`${j.status}:${j.updated_at}`} />
      </section>
      {job.error ? <p class="form-error">Refresh failed: {errorMessage(job.error)}</p> : null}
    </div>
  );
}
