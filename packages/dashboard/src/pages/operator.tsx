import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { EmptyState, Loading, PageHeader } from '../components/ui';
import { API_BASE } from '../lib/api';
import { formatTime } from '../lib/format';

interface DoctorCheck {
  name: string;
  status: 'ok' | 'warn' | 'critical';
  value: number | null;
  hint: string;
}

interface DoctorAnswer {
  checked_at: string;
  status: DoctorCheck['status'];
  checks: DoctorCheck[];
}

/** The admin key lives in this tab only (sessionStorage), like the session itself, never on disk. */
const ADMIN_KEY = 'spool.operator.admin-key';
const REFRESH_MS = 10_000;
const BADGE: Record<DoctorCheck['status'], string> = { ok: 'healthy', warn: 'degraded', critical: 'failed' };

function Badge({ status }: { status: DoctorCheck['status'] }): JSX.Element {
  return <span class={`badge badge-${BADGE[status]}`} data-status={status}>{status}</span>;
}

/**
 * The queue doctor (GET /api/v1/admin/doctor): what holds back vacuum, hot-table bloat, claim p99 and
 * expired leases across the whole cluster. It is the operator's, so it asks for the server's admin key
 * (X-Admin-Key), not the organization key this dashboard signed in with.
 */
export function Operator(): JSX.Element {
  const [adminKey, setAdminKey] = useState<string | null>(() => sessionStorage.getItem(ADMIN_KEY));
  const [answer, setAnswer] = useState<DoctorAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!adminKey) return;
    let stopped = false;
    const load = async () => {
      try {
        const response = await fetch(`${API_BASE}/admin/doctor`, { headers: { 'x-admin-key': adminKey } });
        const body = (await response.json().catch(() => null)) as (DoctorAnswer & { message?: string }) | null;
        if (stopped) return;
        if (!response.ok) {
          if (response.status === 401) {
            sessionStorage.removeItem(ADMIN_KEY);
            setAdminKey(null);
          }
          setError(body?.message ?? `The doctor answered ${response.status}`);
          return;
        }
        setError(null);
        setAnswer(body);
      } catch (err) {
        if (!stopped) setError(err instanceof Error ? err.message : String(err));
      }
    };
    void load();
    const timer = setInterval(load, REFRESH_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [adminKey]);

  if (!adminKey) {
    return (
      <div class="page">
        <PageHeader title="Operator" />
        <section class="card">
          <p>The queue doctor shows the whole cluster, so it needs the server's admin key (<code>ADMIN_API_KEY</code>), not an organization's key. It is kept in this tab only.</p>
          <form class="form" onSubmit={(event) => {
            event.preventDefault();
            const key = String(new FormData(event.target as HTMLFormElement).get('admin_key') ?? '').trim();
            if (!key) return;
            sessionStorage.setItem(ADMIN_KEY, key);
            setAdminKey(key);
          }}>
            <label>Admin key<input name="admin_key" type="password" required autoComplete="off" /></label>
            {error ? <p class="form-error" role="alert">{error}</p> : null}
            <div class="form-actions"><button type="submit" class="primary">Open the doctor</button></div>
          </form>
        </section>
      </div>
    );
  }
  return (
    <div class="page">
      <PageHeader title="Operator" />
      <section class="card" data-testid="doctor">
        <header class="section-header">
          <h2>Queue doctor {answer ? <Badge status={answer.status} /> : null}</h2>
          <button type="button" onClick={() => { sessionStorage.removeItem(ADMIN_KEY); setAdminKey(null); setAnswer(null); }}>Forget the admin key</button>
        </header>
        {error ? <p class="form-error" role="alert">{error}</p> : null}
        {!answer ? <Loading /> : answer.checks.length === 0 ? <EmptyState title="No checks" /> : (
          <>
            <p class="muted small">Checked {formatTime(answer.checked_at)}; refreshed every {REFRESH_MS / 1000} s.</p>
            <div class="table-wrap">
              <table>
                <thead><tr><th>Check</th><th>Status</th><th class="num">Value</th><th>What it means</th></tr></thead>
                <tbody>
                  {answer.checks.map((check) => (
                    <tr key={check.name} data-check={check.name}>
                      <td class="mono">{check.name}</td>
                      <td><Badge status={check.status} /></td>
                      <td class="num">{check.value === null ? '—' : Number.isInteger(check.value) ? check.value : check.value.toFixed(1)}</td>
                      <td>{check.hint}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </section>
    </div>
  );
}
