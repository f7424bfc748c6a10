/** Paced DLQ replays on the dead letters page: start one, follow them with progress bars, cancel. */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Modal } from '../components/dialog';
import { notify, notifyError } from '../components/toast';
import { ErrorState, StatusBadge } from '../components/ui';
import { api, errorMessage } from '../lib/api';
import { formatCount, formatRelative, formatSeconds, formatTime, shortId } from '../lib/format';
import { useNow, useResource } from '../lib/hooks';
import type { DlqReplay } from '../lib/types';

const PER_SECOND_MAX = 10_000;
/** How often the list is read while a replay runs, and otherwise. */
const POLL_RUNNING_MS = 1000;
const POLL_IDLE_MS = 10_000;

/** "Replay all (paced)": the whole DLQ (of one queue, or all) at a chosen number of jobs per second. */
export function PacedReplayDialog({ queue, total, onClose, onStarted }: { queue: string; total: number | null; onClose: () => void; onStarted: (replay: DlqReplay) => void }): JSX.Element {
  const [perSecond, setPerSecond] = useState('100');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const parsed = perSecond.trim() === '' ? null : Number(perSecond);
  const invalid = parsed !== null && !(Number.isInteger(parsed) && parsed >= 1 && parsed <= PER_SECOND_MAX);
  const start = async (event: Event) => {
    event.preventDefault();
    if (invalid) return;
    setBusy(true);
    setError(null);
    try {
      const replay = await api<DlqReplay>('POST', '/jobs/dlq/replays', { body: { ...(queue ? { queue_name: queue } : {}), ...(parsed !== null ? { per_second: parsed } : {}) } });
      notify(replay.total === 0 ? 'Nothing to replay: the dead-letter queue is empty' : `Replay started: ${formatCount(replay.total)} job${replay.total === 1 ? '' : 's'}${replay.per_second ? ` at ${formatCount(replay.per_second)}/s` : ''}`);
      onStarted(replay);
      onClose();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <Modal title="Replay all at a pace" onClose={onClose}>
      <form onSubmit={start}>
        <p>
          Replays all dead-lettered jobs {queue ? <>in <strong>{queue}</strong></> : <>in every queue</>}{total !== null && !queue ? ` (${formatCount(total)})` : ''} in
          the background, no faster than the pace below, so that the service that just recovered is not flooded. Each job goes back to <strong>pending</strong> with
          its retry count reset. You can cancel it at any time; jobs already replayed stay replayed.
        </p>
        <label>
          Jobs per second
          <input name="per_second" type="number" min={1} max={PER_SECOND_MAX} step={1} value={perSecond} placeholder="as fast as possible"
            aria-invalid={invalid} onInput={(e) => setPerSecond((e.target as HTMLInputElement).value)} />
        </label>
        <p class="muted small">1 to {formatCount(PER_SECOND_MAX)}; leave empty for as fast as batches go.</p>
        {invalid ? <p class="form-error" role="alert">Jobs per second must be a whole number from 1 to {formatCount(PER_SECOND_MAX)}.</p> : null}
        {error ? <p class="form-error" role="alert">{error}</p> : null}
        <div class="form-actions">
          <button type="button" onClick={onClose} disabled={busy}>Cancel</button>
          <button type="submit" class="primary" disabled={busy || invalid}>{busy ? 'Starting…' : 'Start replay'}</button>
        </div>
      </form>
    </Modal>
  );
}

/** `api_key:<id>[/session:<id>]` as "key …1a2b3c4d" (the whole actor is in the title). */
function actorLabel(actor: string): string {
  const key = /^api_key:([^/]+)/.exec(actor)?.[1];
  return key ? `key ${shortId(key)}` : actor;
}

function ReplayRow({ replay, now, onChanged }: { replay: DlqReplay; now: number; onChanged: () => void }): JSX.Element {
  const [busy, setBusy] = useState(false);
  const percent = Math.floor(replay.progress);
  const cancel = async () => {
    setBusy(true);
    try {
      const cancelled = await api<DlqReplay>('DELETE', `/jobs/dlq/replays/${encodeURIComponent(replay.id)}`);
      notify(`Replay cancelled: ${formatCount(cancelled.done)} of ${formatCount(cancelled.total)} replayed`);
      onChanged();
    } catch (err) {
      notifyError('Could not cancel the replay', err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <tr data-replay-id={replay.id} data-status={replay.status}>
      <td class="mono" title={replay.id}>{shortId(replay.id)}</td>
      <td>{replay.queue_name ?? (replay.job_ids_count !== null ? `${formatCount(replay.job_ids_count)} ids` : <span class="muted">all queues</span>)}</td>
      <td><StatusBadge status={replay.status} /></td>
      <td class="replay-progress">
        <div class="progress-bar" role="progressbar" aria-label={`Replay ${shortId(replay.id)} progress`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={percent}>
          <div class={`progress-fill progress-fill-${replay.status}`} style={{ width: `${replay.progress}%` }} />
        </div>
        <span class="small" data-testid="replay-counts">
          {percent}% · {formatCount(replay.done)} / {formatCount(replay.total)}{replay.skipped > 0 ? ` · ${formatCount(replay.skipped)} skipped` : ''}
        </span>
        {replay.error ? <span class="small error-text" title={replay.error}>{replay.error}</span> : null}
      </td>
      <td class="num">{replay.per_second === null ? <span class="muted">max</span> : `${formatCount(replay.per_second)}/s`}</td>
      <td class="num">{replay.rate === null ? '—' : `${formatCount(replay.rate)}/s`}</td>
      <td>{replay.status === 'running' ? formatSeconds(replay.eta_seconds) : <span title={formatTime(replay.finished_at)}>{formatRelative(replay.finished_at, now)}</span>}</td>
      <td title={formatTime(replay.created_at)}>{formatRelative(replay.created_at, now)}<div class="muted small" title={replay.created_by}>by {actorLabel(replay.created_by)}</div></td>
      <td class="actions">{replay.status === 'running' ? <button type="button" disabled={busy} onClick={cancel}>Cancel</button> : null}</td>
    </tr>
  );
}

/**
 * The latest replays with their progress, read again every second while one
 * is running (replays have no live events), every 10 s otherwise. `bump`
 * changes when the page started one.
 */
export function ReplayList({ bump }: { bump: number }): JSX.Element | null {
  // Re-rendered every 5 s for the relative times, and at each reading; the clock is read at rendering.
  useNow(5000);
  const now = Date.now();
  const list = useResource((signal) => api<DlqReplay[]>('GET', '/jobs/dlq/replays?limit=10', { signal }), [bump]);
  const running = (list.data ?? []).some((r) => r.status === 'running');
  useEffect(() => {
    const timer = setInterval(() => {
      if (!document.hidden) list.reload();
    }, running ? POLL_RUNNING_MS : POLL_IDLE_MS);
    return () => clearInterval(timer);
  }, [running, list.reload]);
  if (!list.data) return list.error ? <ErrorState error={list.error} what="DLQ replays" retry={list.reload} /> : null;
  if (list.data.length === 0) return null;
  return (
    <section class="replays" aria-label="Replays">
      <h2>Replays</h2>
      <div class="table-wrap">
        <table class="replay-table">
          <thead>
            <tr><th>Replay</th><th>Queue</th><th>Status</th><th>Progress</th><th class="num">Pace</th><th class="num">Rate</th><th>ETA / ended</th><th>Started</th><th class="actions"><span class="visually-hidden">Actions</span></th></tr>
          </thead>
          <tbody>
            {list.data.map((replay) => <ReplayRow key={replay.id} replay={replay} now={now} onChanged={list.reload} />)}
          </tbody>
        </table>
      </div>
    </section>
  );
}
