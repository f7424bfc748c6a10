import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ConfirmDialog, Modal } from '../components/dialog';
import { notify, notifyError } from '../components/toast';
import { EmptyState, ErrorState, Link, Loading, PageHeader, StatusBadge } from '../components/ui';
import { api, ApiError, errorMessage } from '../lib/api';
import { formatCount, formatDuration, formatPercent, formatSeconds } from '../lib/format';
import { useLiveRefresh, useResource } from '../lib/hooks';
import type { Dashboard, QueueConfig, QueueStats, QueueSummary } from '../lib/types';

const MAX_QUEUES = 100;

interface QueueView {
  name: string;
  config: QueueSummary | null;
  stats: QueueStats | null;
}

/** Every queue the organization has: configured ones plus those that only have jobs (from /dashboard). */
async function loadQueues(signal: AbortSignal): Promise<QueueView[]> {
  const [configured, dashboard] = await Promise.all([
    api<QueueSummary[]>('GET', '/queues', { signal }),
    api<Dashboard>('GET', '/dashboard', { signal }).catch((err: unknown) => {
      if (err instanceof ApiError && err.missingEndpoint) return null;
      throw err;
    }),
  ]);
  const names = new Set([...configured.map((q) => q.queue_name), ...(dashboard?.queues ?? []).map((q) => q.name)]);
  const byName = new Map(configured.map((q) => [q.queue_name, q]));
  const list = [...names].sort().slice(0, MAX_QUEUES);
  return Promise.all(list.map(async (name) => ({
    name,
    config: byName.get(name) ?? null,
    stats: await api<QueueStats>('GET', `/queues/${encodeURIComponent(name)}/stats`, { signal }).catch(() => null),
  })));
}

function failureRate(stats: QueueStats | null): number | null {
  if (!stats) return null;
  const finished = stats.completed_jobs_24h + stats.failed_jobs_24h;
  return finished === 0 ? null : stats.failed_jobs_24h / finished;
}

function isPaused(q: QueueView): boolean {
  return q.stats?.paused ?? (q.config ? !q.config.enabled : false);
}

/** Edits a queue's config; with `name` empty it configures a new queue (name asked in the form). */
function ConfigDialog({ name, onClose, onSaved }: { name: string; onClose: () => void; onSaved: () => void }): JSX.Element {
  const config = useResource(async (signal) => {
    if (!name) return null;
    return api<QueueConfig>('GET', `/queues/${encodeURIComponent(name)}`, { signal }).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404 && !err.missingEndpoint) return null;
      throw err;
    });
  }, [name]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const target = name || String(form.get('queue_name') ?? '').trim();
    const int = (field: string) => {
      const raw = String(form.get(field) ?? '').trim();
      return raw === '' ? null : Number(raw);
    };
    const body: Record<string, unknown> = { queue_name: target, max_retries: int('max_retries'), default_timeout: int('default_timeout'), rate_limit: int('rate_limit') };
    for (const field of ['backoff_base_ms', 'backoff_max_ms', 'backoff_jitter_ms', 'concurrency_limit', 'rate_limit_burst', 'concurrency_key_limit']) {
      if (form.has(field)) body[field] = int(field);
    }
    if (form.has('fairness')) body.fairness = String(form.get('fairness')) === '' ? null : String(form.get('fairness'));
    if (form.has('fairness_weights')) {
      // One "key = weight" per line; empty clears the weights.
      const lines = String(form.get('fairness_weights')).split('\n').map((line) => line.trim()).filter(Boolean);
      const weights = lines.map((line) => /^(.+?)\s*=\s*(\d+)$/.exec(line));
      const bad = weights.findIndex((m) => m === null);
      if (bad >= 0) {
        setError(`Fairness weights, line ${bad + 1}: write key = weight (a whole number from 1 to 100)`);
        return;
      }
      body.fairness_weights = weights.length === 0 ? null : weights.map((m) => ({ key: m![1]!, weight: Number(m![2]) }));
    }
    // Empty means "none" (or "the default") for the limits, "unchanged" for the rest.
    const nullable = ['rate_limit', 'concurrency_limit', 'rate_limit_burst', 'concurrency_key_limit', 'fairness', 'fairness_weights'];
    for (const key of Object.keys(body)) if (body[key] === null && !nullable.includes(key)) delete body[key];
    setBusy(true);
    setError(null);
    try {
      await api('PUT', `/queues/${encodeURIComponent(target)}/config`, { body });
      notify(`Saved the config of ${target}`);
      onSaved();
      onClose();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  const c = config.data;
  const extended = c ? 'backoff_base_ms' in c : false;
  return (
    <Modal title={name ? `Configure ${name}` : 'Configure a queue'} onClose={onClose}>
      {config.loading && !c ? <Loading /> : config.error ? <ErrorState error={config.error} what="Queue config" /> : (
        <form class="form" onSubmit={submit}>
          {name ? null : <label>Queue name<input name="queue_name" required maxLength={100} pattern="[A-Za-z0-9_][A-Za-z0-9_.\-]*" autoFocus /></label>}
          <label>Max retries<input name="max_retries" type="number" min={0} max={100} defaultValue={c?.max_retries ?? 3} /></label>
          <label>Default timeout (s)<input name="default_timeout" type="number" min={1} max={86400} defaultValue={c?.default_timeout ?? 300} /></label>
          <label>Rate limit (jobs/s, empty = none)<input name="rate_limit" type="number" min={1} max={100000} defaultValue={c?.rate_limit ?? ''} /></label>
          {extended || !c ? (
            <fieldset>
              <legend>Spool extensions</legend>
              <label>Backoff base (ms)<input name="backoff_base_ms" type="number" min={0} defaultValue={c?.backoff_base_ms ?? 1000} /></label>
              <label>Backoff cap (ms)<input name="backoff_max_ms" type="number" min={0} defaultValue={c?.backoff_max_ms ?? 60000} /></label>
              <label>Backoff jitter (ms)<input name="backoff_jitter_ms" type="number" min={0} defaultValue={c?.backoff_jitter_ms ?? 500} /></label>
              <label>Concurrency limit (empty = none)<input name="concurrency_limit" type="number" min={1} defaultValue={c?.concurrency_limit ?? ''} /></label>
              <label>Per-key concurrency limit (jobs with the same concurrency_key; empty = none)<input name="concurrency_key_limit" type="number" min={1} max={100000} defaultValue={c?.concurrency_key_limit ?? ''} /></label>
              <label>Fair share across fairness keys<select name="fairness" defaultValue={c?.fairness ?? ''}><option value="">Off (oldest first)</option><option value="round_robin">Round robin</option></select></label>
              <label>Fairness weights (one key = weight per line; others weigh 1)<textarea name="fairness_weights" rows={3} defaultValue={(c?.fairness_weights ?? []).map((w) => `${w.key} = ${w.weight}`).join('\n')} /></label>
              <label>Rate limit burst (jobs at once; empty = a tenth of the rate)<input name="rate_limit_burst" type="number" min={1} max={100000} defaultValue={c?.rate_limit_burst ?? ''} /></label>
            </fieldset>
          ) : null}
          {error ? <p class="form-error" role="alert">{error}</p> : null}
          <div class="form-actions">
            <button type="button" onClick={onClose}>Cancel</button>
            <button type="submit" class="primary" disabled={busy}>{busy ? 'Saving…' : 'Save'}</button>
          </div>
        </form>
      )}
    </Modal>
  );
}

function PauseDialog({ name, onClose, onDone }: { name: string; onClose: () => void; onDone: () => void }): JSX.Element {
  const [reason, setReason] = useState('');
  return (
    <ConfirmDialog
      title={`Pause ${name}?`}
      confirmLabel="Pause queue"
      onClose={onClose}
      onConfirm={async () => {
        await api('POST', `/queues/${encodeURIComponent(name)}/pause`, { body: reason.trim() ? { reason: reason.trim() } : {} });
        notify(`Paused ${name}`);
        onDone();
      }}
    >
      <p>Workers stop receiving jobs from <strong>{name}</strong> until it is resumed. Jobs already running finish normally.</p>
      <label>Reason (optional)<input value={reason} maxLength={500} onInput={(e) => setReason((e.target as HTMLInputElement).value)} /></label>
    </ConfirmDialog>
  );
}

function QueueRowView({ q, onPause, onConfig, reload }: { q: QueueView; onPause: () => void; onConfig: () => void; reload: () => void }): JSX.Element {
  const paused = isPaused(q);
  const resume = async () => {
    try {
      await api('POST', `/queues/${encodeURIComponent(q.name)}/resume`);
      notify(`Resumed ${q.name}`);
      reload();
    } catch (err) {
      notifyError(`Could not resume ${q.name}`, err);
    }
  };
  const s = q.stats;
  const rate = failureRate(s);
  return (
    <tr data-queue={q.name}>
      <td><Link href={`/queues/${encodeURIComponent(q.name)}`}>{q.name}</Link></td>
      <td>{paused ? <StatusBadge status="paused" /> : <StatusBadge status="active" />}</td>
      <td class="num">{formatCount(s?.pending_jobs)}</td>
      <td class="num">{formatCount(s?.processing_jobs)}</td>
      <td class="num">{formatSeconds(s?.max_job_age_seconds)}</td>
      <td class="num">{formatPercent(rate)}</td>
      <td class="num">{formatDuration(s?.avg_processing_time_ms)}</td>
      <td class="num">{formatCount(s?.active_workers)}</td>
      <td class="actions">
        {paused ? <button type="button" onClick={resume}>Resume</button> : <button type="button" onClick={onPause}>Pause</button>}
        <button type="button" onClick={onConfig}>Configure</button>
      </td>
    </tr>
  );
}

export function Queues(): JSX.Element {
  const queues = useResource(loadQueues, []);
  useLiveRefresh(queues.reload, { when: (e) => e.type.startsWith('queue.') || e.type === 'job.created', pollMs: 10_000, livePollMs: 15_000 });
  const [pausing, setPausing] = useState<string | null>(null);
  const [configuring, setConfiguring] = useState<string | null>(null);
  const list = queues.data;
  return (
    <div class="page">
      <PageHeader title="Queues">
        <button type="button" onClick={() => setConfiguring('')}>Configure a queue…</button>
      </PageHeader>
      {!list ? (queues.error ? <ErrorState error={queues.error} what="Queues" retry={queues.reload} /> : <Loading />) : list.length === 0 ? (
        <EmptyState title="No queues yet">Queues appear when the first job is enqueued or a queue is configured.</EmptyState>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr><th>Queue</th><th>State</th><th class="num">Depth</th><th class="num">In flight</th><th class="num">Oldest pending</th><th class="num">Failure rate 24 h</th><th class="num">Avg run time</th><th class="num">Workers</th><th class="actions" /></tr>
            </thead>
            <tbody>
              {list.map((q) => <QueueRowView key={q.name} q={q} reload={queues.reload} onPause={() => setPausing(q.name)} onConfig={() => setConfiguring(q.name)} />)}
            </tbody>
          </table>
        </div>
      )}
      {list && list.length >= MAX_QUEUES ? <p class="muted small">Showing the first {MAX_QUEUES} queues by name.</p> : null}
      {pausing ? <PauseDialog name={pausing} onClose={() => setPausing(null)} onDone={queues.reload} /> : null}
      {configuring !== null ? <ConfigDialog name={configuring} onClose={() => setConfiguring(null)} onSaved={queues.reload} /> : null}
    </div>
  );
}
