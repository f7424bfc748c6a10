import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { errorMessage } from '../lib/api';
import { signIn } from '../lib/auth';
import { sessionEndedReason } from '../lib/session';

export function SignIn(): JSX.Element {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const ended = sessionEndedReason();

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(key);
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <form class="card sign-in-card" onSubmit={submit}>
        <div class="brand brand-large"><span class="brand-mark" aria-hidden="true" />Spool</div>
        <h1>Sign in</h1>
        {ended ? <p class="notice" role="status" data-testid="session-ended">{ended}</p> : null}
        <label>
          API key
          <input
            type="password"
            name="api_key"
            autoComplete="off"
            spellcheck={false}
            placeholder="sk_test_…"
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
            required
            autoFocus
          />
        </label>
        <p class="muted small">The key is exchanged for a session token that this tab keeps until you sign out or close it.</p>
        {error ? <p class="form-error" role="alert">{error}</p> : null}
        <button type="submit" class="primary" disabled={busy || key.trim() === ''}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </main>
  );
}
