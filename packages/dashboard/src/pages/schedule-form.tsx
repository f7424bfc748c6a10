import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ApiError, errorMessage } from '../lib/api';
import { formatInZone, formatRelative } from '../lib/format';
import type { Schedule } from '../lib/types';

const PREVIEW_COUNT = 5;
const PREVIEW_DELAY_MS = 300;

interface Preview {
  state: 'idle' | 'loading' | 'ok' | 'error' | 'unavailable';
  runs: string[];
  message: string | null;
  /** The expression and zone the shown runs belong to (the input may be ahead of them). */
  of: string;
}

function timeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
  try {
    return ['UTC', ...(intl.supportedValuesOf?.('timeZone') ?? [])];
  } catch {
    return ['UTC'];
  }
}

/** The next fire times of an unsaved expression, asked of the server as the user types. */
function usePreview(cron: string, timezone: string): Preview {
  const [preview, setPreview] = useState<Preview>({ state: 'idle', runs: [], message: null, of: '' });
  useEffect(() => {
    if (!cron.trim()) {
      setPreview({ state: 'idle', runs: [], message: null, of: '' });
      return;
    }
    const abort = new AbortController();
    setPreview((p) => ({ ...p, state: 'loading' }));
    const of = `${cron.trim()} @ ${timezone.trim() || 'UTC'}`;
    const timer = setTimeout(() => {
      api<{ next_runs: string[] }>('POST', '/schedules/preview', { body: { cron_expression: cron.trim(), timezone: timezone.trim() || 'UTC', count: PREVIEW_COUNT }, signal: abort.signal }).then(
        (result) => setPreview({ state: 'ok', runs: result.next_runs, message: null, of }),
        (err: unknown) => {
          if (abort.signal.aborted) return;
          if (err instanceof ApiError && err.missingEndpoint) setPreview({ state: 'unavailable', runs: [], message: 'This server cannot preview fire times.', of });
          else setPreview({ state: 'error', runs: [], message: errorMessage(err), of });
        },
      );
    }, PREVIEW_DELAY_MS);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [cron, timezone]);
  return preview;
}

function PreviewList({ preview, timezone }: { preview: Preview; timezone: string }): JSX.Element {
  const zone = timezone.trim() || 'UTC';
  return (
    <div class="preview" data-testid="schedule-preview" aria-live="polite">
      <h3>Next fire times</h3>
      {preview.state === 'idle' ? <p class="muted">Type a cron expression.</p> : null}
      {preview.state === 'loading' && preview.runs.length === 0 ? <p class="muted">Computing…</p> : null}
      {preview.state === 'error' || preview.state === 'unavailable' ? <p class={preview.state === 'error' ? 'form-error' : 'muted'}>{preview.message}</p> : null}
      {preview.runs.length > 0 && preview.state !== 'error' ? (
        <ol class="preview-runs" data-for={preview.of}>
          {preview.runs.map((run) => (
            <li key={run}><span>{formatInZone(run, zone)}</span> <span class="muted small">({formatRelative(run)})</span></li>
          ))}
        </ol>
      ) : null}
    </div>
  );
}

function parseJson(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'VALIDATION_ERROR', `${field} is not valid JSON`);
  }
}

/** Create (no `schedule`) or edit a schedule, with a live preview of its next fire times. */
export function ScheduleForm({ schedule, onSaved, onCancel }: { schedule?: Schedule; onSaved: (id: string) => void; onCancel: () => void }): JSX.Element {
  const [cron, setCron] = useState(schedule?.cron_expression ?? '0 */5 * * * *');
  const [timezone, setTimezone] = useState(schedule?.timezone ?? 'UTC');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const preview = usePreview(cron, timezone);
  const zones = useMemo(timeZones, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const text = (name: string) => String(form.get(name) ?? '').trim();
    setBusy(true);
    setError(null);
    try {
      const payloadTemplate = parseJson(text('payload_template') || '{}', 'Payload template');
      if (!payloadTemplate || typeof payloadTemplate !== 'object' || Array.isArray(payloadTemplate)) throw new ApiError(400, 'VALIDATION_ERROR', 'Payload template must be a JSON object');
      const body = {
        name: text('name'),
        description: text('description') || null,
        cron_expression: cron.trim(),
        timezone: timezone.trim() || 'UTC',
        queue_name: text('queue_name'),
        payload_template: payloadTemplate,
        priority: Number(text('priority') || 0),
        max_retries: Number(text('max_retries') || 3),
        timeout_seconds: Number(text('timeout_seconds') || 300),
      };
      const saved = schedule
        ? await api<Schedule>('PUT', `/schedules/${schedule.id}`, { body })
        : await api<{ id: string }>('POST', '/schedules', { body });
      onSaved(saved.id);
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <form class="form schedule-form" onSubmit={submit}>
      <div class="form-columns">
        <div>
          <label>Name<input name="name" required maxLength={255} defaultValue={schedule?.name ?? ''} /></label>
          <label>Cron expression <span class="muted small">sec min hour day month weekday</span>
            <input name="cron_expression" class="mono" required value={cron} onInput={(e) => setCron((e.target as HTMLInputElement).value)} spellcheck={false} />
          </label>
          <label>Time zone
            <input name="timezone" list="time-zones" value={timezone} onInput={(e) => setTimezone((e.target as HTMLInputElement).value)} />
          </label>
          <datalist id="time-zones">{zones.map((z) => <option key={z} value={z} />)}</datalist>
          <label>Queue<input name="queue_name" required maxLength={100} defaultValue={schedule?.queue_name ?? ''} /></label>
          <label>Payload template (JSON)<textarea name="payload_template" class="mono" rows={4} defaultValue={schedule ? JSON.stringify(schedule.payload_template, null, 2) : '{}'} /></label>
          <div class="form-row">
            <label>Priority<input name="priority" type="number" min={-100} max={100} defaultValue={schedule?.priority ?? 0} /></label>
            <label>Max retries<input name="max_retries" type="number" min={0} max={100} defaultValue={schedule?.max_retries ?? 3} /></label>
            <label>Timeout (s)<input name="timeout_seconds" type="number" min={1} max={86400} defaultValue={schedule?.timeout_seconds ?? 300} /></label>
          </div>
          <label>Description<input name="description" maxLength={1000} defaultValue={schedule?.description ?? ''} /></label>
        </div>
        <PreviewList preview={preview} timezone={timezone} />
      </div>
      {error ? <p class="form-error" role="alert">{error}</p> : null}
      <div class="form-actions">
        <button type="button" onClick={onCancel}>Cancel</button>
        <button type="submit" class="primary" disabled={busy}>{busy ? 'Saving…' : schedule ? 'Save' : 'Create schedule'}</button>
      </div>
    </form>
  );
}
