import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ConfirmDialog, Modal } from '../components/dialog';
import { notify } from '../components/toast';
import { ErrorState, Loading, StatusBadge } from '../components/ui';
import { api, errorMessage } from '../lib/api';
import { formatRelative, formatTime } from '../lib/format';
import { useNow, useResource } from '../lib/hooks';

interface WebhookToken {
  token: string | null;
  webhook_url: string;
}

type Provider = 'github' | 'stripe';

interface SecretStatus {
  provider: Provider;
  configured: boolean;
  updated_at: string | null;
  webhook_url: string;
}

const PROVIDERS: { id: Provider; name: string; hint: string }[] = [
  { id: 'github', name: 'GitHub', hint: 'The "Secret" of the repository or organization webhook (Content type: application/json).' },
  { id: 'stripe', name: 'Stripe', hint: 'The endpoint\'s signing secret (whsec_…) from the Stripe dashboard.' },
];

function SetSecret({ provider, onClose, onSaved }: { provider: (typeof PROVIDERS)[number]; onClose: () => void; onSaved: () => void }): JSX.Element {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const secret = String(new FormData(event.target as HTMLFormElement).get('secret') ?? '');
    setBusy(true);
    setError(null);
    try {
      await api('PUT', `/organizations/webhook-secrets/${provider.id}`, { body: { secret } });
      notify(`${provider.name} signing secret saved`);
      onSaved();
      onClose();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <Modal title={`${provider.name} signing secret`} onClose={onClose}>
      <form class="form" onSubmit={submit}>
        <p class="muted small">{provider.hint} It is stored encrypted and never shown again; deliveries signed with the previous secret are refused from now on.</p>
        <label>Signing secret<input name="secret" type="password" required maxLength={1024} autoComplete="off" autoFocus /></label>
        {error ? <p class="form-error" role="alert">{error}</p> : null}
        <div class="form-actions">
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy}>{busy ? 'Saving…' : 'Save secret'}</button>
        </div>
      </form>
    </Modal>
  );
}

/** The organization's ingestion credentials: the custom webhook token and the GitHub/Stripe signing secrets. */
export function IncomingWebhooks(): JSX.Element {
  const token = useResource((signal) => api<WebhookToken>('GET', '/organizations/webhook-token', { signal }), []);
  const secrets = useResource((signal) => api<Record<Provider, SecretStatus>>('GET', '/organizations/webhook-secrets', { signal }), []);
  const [setting, setSetting] = useState<(typeof PROVIDERS)[number] | null>(null);
  const [removing, setRemoving] = useState<(typeof PROVIDERS)[number] | null>(null);
  const [confirmToken, setConfirmToken] = useState<'regenerate' | 'clear' | null>(null);
  const now = useNow(30_000);
  return (
    <section class="card" data-testid="incoming-webhooks">
      <header class="section-header"><h2>Incoming webhooks</h2></header>
      <h3>Custom ingestion token</h3>
      {!token.data ? (token.error ? <ErrorState error={token.error} what="the webhook token" retry={token.reload} /> : <Loading />) : (
        <div>
          <p class="muted small">Send <code>X-Webhook-Token</code> with every <code>POST {token.data.webhook_url}</code>. Without a token, custom ingestion is off.</p>
          {token.data.token ? (
            <div class="secret-row"><input class="mono secret" readOnly aria-label="Webhook token" value={token.data.token} data-testid="webhook-token" onFocus={(e) => (e.target as HTMLInputElement).select()} /></div>
          ) : <p data-testid="webhook-token-off">Custom ingestion is off.</p>}
          <div class="form-actions">
            <button type="button" onClick={() => setConfirmToken('regenerate')}>{token.data.token ? 'Regenerate token' : 'Generate token'}</button>
            {token.data.token ? <button type="button" class="danger" onClick={() => setConfirmToken('clear')}>Turn off</button> : null}
          </div>
        </div>
      )}
      <h3>Signing secrets</h3>
      {!secrets.data ? (secrets.error ? <ErrorState error={secrets.error} what="signing secrets" retry={secrets.reload} /> : <Loading />) : (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Provider</th><th>Secret</th><th>Payload URL</th><th class="actions" /></tr></thead>
            <tbody>
              {PROVIDERS.map((provider) => {
                const status = secrets.data![provider.id];
                return (
                  <tr key={provider.id} data-provider={provider.id}>
                    <td>{provider.name}</td>
                    <td>
                      <StatusBadge status={status.configured ? 'active' : 'disabled'} />
                      {status.updated_at ? <span class="muted small" title={formatTime(status.updated_at)}> set {formatRelative(status.updated_at, now)}</span> : null}
                    </td>
                    <td class="mono small">{status.webhook_url}</td>
                    <td class="actions">
                      <button type="button" onClick={() => setSetting(provider)}>{status.configured ? 'Replace' : 'Set secret'}</button>
                      {status.configured ? <button type="button" class="danger" onClick={() => setRemoving(provider)}>Remove</button> : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {setting ? <SetSecret provider={setting} onClose={() => setSetting(null)} onSaved={secrets.reload} /> : null}
      {removing ? (
        <ConfirmDialog title={`Remove the ${removing.name} secret?`} confirmLabel="Remove secret" danger onClose={() => setRemoving(null)} onConfirm={async () => {
          await api('DELETE', `/organizations/webhook-secrets/${removing.id}`);
          notify(`${removing.name} signing secret removed`);
          secrets.reload();
        }}>
          <p>Every {removing.name} delivery to this organization is refused until a secret is set again.</p>
        </ConfirmDialog>
      ) : null}
      {confirmToken ? (
        <ConfirmDialog
          title={confirmToken === 'clear' ? 'Turn off custom ingestion?' : 'Replace the webhook token?'}
          confirmLabel={confirmToken === 'clear' ? 'Turn off' : 'Replace token'}
          danger={confirmToken === 'clear'}
          onClose={() => setConfirmToken(null)}
          onConfirm={async () => {
            await api('POST', `/organizations/webhook-token/${confirmToken === 'clear' ? 'clear' : 'regenerate'}`, { body: {} });
            notify(confirmToken === 'clear' ? 'Custom ingestion turned off' : 'New webhook token generated');
            token.reload();
          }}
        >
          <p>{confirmToken === 'clear' ? 'Custom webhooks are refused until a new token is generated.' : 'Senders using the current token are refused from now on.'}</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
