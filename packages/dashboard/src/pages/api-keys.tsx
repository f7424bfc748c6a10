import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ConfirmDialog, Modal } from '../components/dialog';
import { notify } from '../components/toast';
import { EmptyState, ErrorState, Loading, StatusBadge } from '../components/ui';
import { api, errorMessage } from '../lib/api';
import { formatRelative, formatTime } from '../lib/format';
import { useNow, useResource } from '../lib/hooks';
import { getSession } from '../lib/session';
import type { ApiKey } from '../lib/types';

interface CreatedKey {
  id: string;
  key: string;
  name: string;
}

function CreateKey({ onClose, onCreated }: { onClose: () => void; onCreated: () => void }): JSX.Element {
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [copied, setCopied] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const queues = String(form.get('queues') ?? '').split(',').map((q) => q.trim()).filter(Boolean);
    const rateLimit = String(form.get('rate_limit') ?? '').trim();
    const expires = String(form.get('expires_at') ?? '').trim();
    setBusy(true);
    setError(null);
    try {
      const key = await api<CreatedKey>('POST', '/api-keys', {
        body: {
          name: String(form.get('name') ?? '').trim(),
          queues,
          role: String(form.get('role') ?? 'admin'),
          ...(rateLimit ? { rate_limit: Number(rateLimit) } : {}),
          ...(expires ? { expires_at: new Date(expires).toISOString() } : {}),
        },
      });
      setCreated(key);
      onCreated();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  const copy = async () => {
    if (!created) return;
    try {
      await navigator.clipboard.writeText(created.key);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };

  return (
    <Modal title={created ? 'Your new API key' : 'Create an API key'} onClose={onClose}>
      {created ? (
        <div>
          <p>This is the only time the key is shown. Copy it now and keep it somewhere safe.</p>
          <div class="secret-row">
            <input class="mono secret" readOnly value={created.key} data-testid="new-api-key" onFocus={(e) => (e.target as HTMLInputElement).select()} />
            <button type="button" onClick={copy}>{copied ? 'Copied' : 'Copy'}</button>
          </div>
          <div class="form-actions"><button type="button" class="primary" onClick={onClose}>Done</button></div>
        </div>
      ) : (
        <form class="form" onSubmit={submit}>
          <label>Name<input name="name" required maxLength={100} pattern="[A-Za-z0-9 _.\(\)\-]+" title="Letters, digits, space and - _ . ( )" autoFocus /></label>
          <label>Queues <span class="muted small">comma-separated; empty = all queues; prefix* allowed</span><input name="queues" placeholder="all queues" /></label>
          <label>Role
            <select name="role">
              <option value="admin" selected>admin: everything its queues allow</option>
              <option value="producer">producer: enqueue, read its jobs</option>
              <option value="worker">worker: claim, heartbeat, complete, fail, register</option>
              <option value="read_only">read_only: read, change nothing</option>
            </select>
          </label>
          <label>Rate limit (requests/s, empty = plan default)<input name="rate_limit" type="number" min={1} max={10000} /></label>
          <label>Expires (empty = never)<input name="expires_at" type="datetime-local" /></label>
          {error ? <p class="form-error" role="alert">{error}</p> : null}
          <div class="form-actions">
            <button type="button" onClick={onClose}>Cancel</button>
            <button type="submit" class="primary" disabled={busy}>{busy ? 'Creating…' : 'Create key'}</button>
          </div>
        </form>
      )}
    </Modal>
  );
}

export function ApiKeys(): JSX.Element {
  const keys = useResource((signal) => api<ApiKey[]>('GET', '/api-keys', { signal }), []);
  const [creating, setCreating] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const now = useNow(10_000);
  const own = getSession()?.apiKeyId ?? null;
  const list = keys.data;
  return (
    <section class="card">
      <header class="section-header">
        <h2>API keys</h2>
        <button type="button" class="primary" onClick={() => setCreating(true)}>Create key</button>
      </header>
      {!list ? (keys.error ? <ErrorState error={keys.error} what="API keys" retry={keys.reload} /> : <Loading />) : list.length === 0 ? (
        <EmptyState title="No API keys" />
      ) : (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Name</th><th>Queues</th><th>Role</th><th>State</th><th>Created</th><th>Last used</th><th>Expires</th><th class="actions" /></tr></thead>
            <tbody>
              {list.map((k) => (
                <tr key={k.id} data-key-id={k.id}>
                  <td>{k.name}{k.id === own ? <span class="badge badge-current" title="This session signed in with this key">this session</span> : null}</td>
                  <td>{k.queues.length === 0 || k.queues.includes('*') ? <span class="muted">all</span> : k.queues.join(', ')}</td>
                  <td>{k.role ?? 'admin'}</td>
                  <td><StatusBadge status={k.is_active ? 'active' : 'revoked'} /></td>
                  <td title={formatTime(k.created_at)}>{formatRelative(k.created_at, now)}</td>
                  <td title={formatTime(k.last_used)}>{formatRelative(k.last_used, now)}</td>
                  <td>{k.expires_at ? formatTime(k.expires_at) : 'never'}</td>
                  <td class="actions">{k.is_active ? <button type="button" class="danger" onClick={() => setRevoking(k)}>Revoke</button> : null}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {creating ? <CreateKey onClose={() => setCreating(false)} onCreated={keys.reload} /> : null}
      {revoking ? (
        <ConfirmDialog title={`Revoke ${revoking.name}?`} confirmLabel="Revoke key" danger onClose={() => setRevoking(null)} onConfirm={async () => {
          await api('DELETE', `/api-keys/${revoking.id}`);
          notify(`Revoked ${revoking.name}`);
          // Revoking the session's own key ends the session: the reload's 401 signs out.
          keys.reload();
        }}>
          <p>Every client using this key is refused from now on. This cannot be undone.</p>
          {revoking.id === own ? <p class="notice"><strong>This session signed in with this key:</strong> revoking it signs you out.</p> : null}
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
