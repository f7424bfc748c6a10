import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ConfirmDialog, Modal } from '../components/dialog';
import { notify, notifyError } from '../components/toast';
import { EmptyState, ErrorState, Loading, StatusBadge } from '../components/ui';
import { api, errorMessage } from '../lib/api';
import { formatRelative, formatTime } from '../lib/format';
import { useNow, useResource } from '../lib/hooks';
import { setQuery } from '../lib/router';
import { WEBHOOK_EVENTS, type Delivery, type Webhook } from '../lib/types';

function WebhookForm({ webhook, onClose, onSaved }: { webhook: Webhook | null; onClose: () => void; onSaved: () => void }): JSX.Element {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const events = WEBHOOK_EVENTS.filter((e) => form.get(`event:${e}`) === 'on');
    const secret = String(form.get('secret') ?? '');
    const body = {
      name: String(form.get('name') ?? '').trim(),
      url: String(form.get('url') ?? '').trim(),
      events,
      enabled: form.get('enabled') === 'on',
      ...(secret ? { secret } : {}),
    };
    setBusy(true);
    setError(null);
    try {
      if (events.length === 0) throw new Error('Choose at least one event');
      if (webhook) await api('PUT', `/outgoing-webhooks/${webhook.id}`, { body });
      else await api('POST', '/outgoing-webhooks', { body });
      notify(webhook ? 'Webhook saved' : 'Webhook created');
      onSaved();
      onClose();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  const chosen = new Set(webhook?.events ?? ['job.completed', 'job.failed']);
  return (
    <Modal title={webhook ? `Edit ${webhook.name}` : 'New outgoing webhook'} onClose={onClose}>
      <form class="form" onSubmit={submit}>
        <label>Name<input name="name" required maxLength={255} defaultValue={webhook?.name ?? ''} /></label>
        <label>URL<input name="url" type="url" required maxLength={2048} placeholder="https://example.com/hooks/spool" defaultValue={webhook?.url ?? ''} /></label>
        <fieldset class="checkbox-grid">
          <legend>Events</legend>
          {WEBHOOK_EVENTS.map((e) => <label key={e} class="checkbox"><input type="checkbox" name={`event:${e}`} defaultChecked={chosen.has(e)} /> {e}</label>)}
        </fieldset>
        <label>Signing secret <span class="muted small">{webhook ? 'leave empty to keep the current one' : 'optional; signs X-Spooled-Signature'}</span><input name="secret" type="password" maxLength={255} autoComplete="off" /></label>
        <label class="checkbox"><input type="checkbox" name="enabled" defaultChecked={webhook?.enabled ?? true} /> Enabled</label>
        {error ? <p class="form-error" role="alert">{error}</p> : null}
        <div class="form-actions">
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy}>{busy ? 'Saving…' : 'Save'}</button>
        </div>
      </form>
    </Modal>
  );
}

function Deliveries({ webhook }: { webhook: Webhook }): JSX.Element {
  const deliveries = useResource((signal) => api<Delivery[]>('GET', `/outgoing-webhooks/${webhook.id}/deliveries`, { signal }), [webhook.id]);
  const now = useNow(10_000);
  const retry = async (delivery: Delivery) => {
    try {
      const result = await api<{ success: boolean; message: string }>('POST', `/outgoing-webhooks/${webhook.id}/retry/${delivery.id}`);
      notify(result.message || (result.success ? 'Delivered' : 'Delivery failed'), result.success ? 'ok' : 'bad');
      deliveries.reload();
    } catch (err) {
      notifyError('Could not retry the delivery', err);
    }
  };
  return (
    <Modal title={`Deliveries of ${webhook.name}`} wide onClose={() => setQuery({ webhook: null })}>
      {!deliveries.data ? (deliveries.error ? <ErrorState error={deliveries.error} what="Deliveries" /> : <Loading />) : deliveries.data.length === 0 ? (
        <EmptyState title="No deliveries yet" />
      ) : (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Event</th><th>Status</th><th class="num">HTTP</th><th class="num">Attempts</th><th>Created</th><th>Error / response</th><th class="actions" /></tr></thead>
            <tbody>
              {deliveries.data.map((d) => (
                <tr key={d.id}>
                  <td>{d.event}</td>
                  <td><StatusBadge status={d.status} /></td>
                  <td class="num">{d.status_code ?? '—'}</td>
                  <td class="num">{d.attempts}</td>
                  <td title={formatTime(d.created_at)}>{formatRelative(d.created_at, now)}</td>
                  <td class="small">{d.error ?? d.response_body ?? ''}</td>
                  <td class="actions">{d.status === 'failed' ? <button type="button" onClick={() => void retry(d)}>Retry</button> : null}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Modal>
  );
}

export function Webhooks({ open }: { open: string | null }): JSX.Element {
  const webhooks = useResource((signal) => api<Webhook[]>('GET', '/outgoing-webhooks', { signal }), []);
  const [editing, setEditing] = useState<Webhook | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Webhook | null>(null);
  const now = useNow(10_000);
  const list = webhooks.data;
  const test = async (w: Webhook) => {
    try {
      const result = await api<{ success: boolean; status_code?: number | null; response_time_ms: number; error?: string | null }>('POST', `/outgoing-webhooks/${w.id}/test`);
      notify(result.success ? `Test delivered: HTTP ${result.status_code} in ${result.response_time_ms} ms` : `Test failed: ${result.error ?? `HTTP ${result.status_code}`}`, result.success ? 'ok' : 'bad');
      webhooks.reload();
    } catch (err) {
      notifyError('Could not test the webhook', err);
    }
  };
  const shown = open ? list?.find((w) => w.id === open) : undefined;
  return (
    <section class="card">
      <header class="section-header">
        <h2>Outgoing webhooks</h2>
        <button type="button" class="primary" onClick={() => setEditing('new')}>New webhook</button>
      </header>
      {!list ? (webhooks.error ? <ErrorState error={webhooks.error} what="Outgoing webhooks" retry={webhooks.reload} /> : <Loading />) : list.length === 0 ? (
        <EmptyState title="No webhooks">Spool can POST job, queue, worker and schedule events to your endpoints, signed with HMAC-SHA256.</EmptyState>
      ) : (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Name</th><th>URL</th><th>Events</th><th>State</th><th>Last delivery</th><th class="num">Failures</th><th class="actions" /></tr></thead>
            <tbody>
              {list.map((w) => (
                <tr key={w.id}>
                  <td>{w.name}</td>
                  <td class="mono small break">{w.url}</td>
                  <td class="small">{w.events.join(', ')}</td>
                  <td><StatusBadge status={w.enabled ? 'active' : 'disabled'} /></td>
                  <td>{w.last_status ? <StatusBadge status={w.last_status} /> : null} <span class="muted small">{formatRelative(w.last_triggered_at, now)}</span></td>
                  <td class="num">{w.failure_count}</td>
                  <td class="actions">
                    <button type="button" onClick={() => setQuery({ webhook: w.id })}>Deliveries</button>
                    <button type="button" onClick={() => void test(w)}>Test</button>
                    <button type="button" onClick={() => setEditing(w)}>Edit</button>
                    <button type="button" class="danger" onClick={() => setDeleting(w)}>Delete</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {editing ? <WebhookForm webhook={editing === 'new' ? null : editing} onClose={() => setEditing(null)} onSaved={webhooks.reload} /> : null}
      {shown ? <Deliveries webhook={shown} /> : null}
      {deleting ? (
        <ConfirmDialog title={`Delete ${deleting.name}?`} confirmLabel="Delete" danger onClose={() => setDeleting(null)} onConfirm={async () => {
          await api('DELETE', `/outgoing-webhooks/${deleting.id}`);
          notify('Webhook deleted');
          webhooks.reload();
        }}>
          <p>Spool stops sending events to {deleting.url}.</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
