import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ConfirmDialog, Modal } from '../components/dialog';
import { notify, notifyError } from '../components/toast';
import { EmptyState, ErrorState, Facts, JsonBlock, Link, Loading, PageHeader, StatusBadge } from '../components/ui';
import { api, ApiError } from '../lib/api';
import { formatRelative, formatTime, shortId } from '../lib/format';
import { useLiveRefresh, useNow, useResource } from '../lib/hooks';
import { navigate } from '../lib/router';
import type { Schedule, ScheduleRun } from '../lib/types';
import { ScheduleForm } from './schedule-form';

async function act(schedule: Schedule, action: 'pause' | 'resume' | 'trigger', reload: () => void): Promise<void> {
  try {
    const result = await api<{ job_id?: string }>('POST', `/schedules/${schedule.id}/${action}`);
    if (action === 'trigger') notify(`Triggered ${schedule.name}: job ${shortId(result.job_id)}`);
    else notify(`${action === 'pause' ? 'Paused' : 'Resumed'} ${schedule.name}`);
    reload();
  } catch (err) {
    notifyError(`Could not ${action} ${schedule.name}`, err);
  }
}

function ScheduleActions({ schedule, reload }: { schedule: Schedule; reload: () => void }): JSX.Element {
  return (
    <>
      {schedule.is_active
        ? <button type="button" onClick={() => void act(schedule, 'pause', reload)}>Pause</button>
        : <button type="button" onClick={() => void act(schedule, 'resume', reload)}>Resume</button>}
      <button type="button" onClick={() => void act(schedule, 'trigger', reload)}>Trigger now</button>
    </>
  );
}

export function Schedules(): JSX.Element {
  const schedules = useResource((signal) => api<Schedule[]>('GET', '/schedules?limit=500', { signal }), []);
  useLiveRefresh(schedules.reload, { when: (e) => e.type === 'schedule.triggered', pollMs: 15_000, livePollMs: 30_000 });
  const [creating, setCreating] = useState(false);
  const now = useNow(5000);
  const list = schedules.data;
  const unavailable = schedules.error instanceof ApiError && schedules.error.missingEndpoint;
  return (
    <div class="page">
      <PageHeader title="Schedules">
        <button type="button" class="primary" disabled={unavailable} onClick={() => setCreating(true)}>New schedule</button>
      </PageHeader>
      {!list ? (schedules.error ? <ErrorState error={schedules.error} what="Schedules" retry={schedules.reload} /> : <Loading />) : list.length === 0 ? (
        <EmptyState title="No schedules">A schedule enqueues a job from its template at every fire time of its cron expression.</EmptyState>
      ) : (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Name</th><th>Cron</th><th>Queue</th><th>State</th><th>Next run</th><th>Last run</th><th class="num">Runs</th><th class="actions" /></tr></thead>
            <tbody>
              {list.map((s) => (
                <tr key={s.id} data-schedule-id={s.id}>
                  <td><Link href={`/schedules/${s.id}`}>{s.name}</Link></td>
                  <td class="mono">{s.cron_expression} <span class="muted small">{s.timezone}</span></td>
                  <td>{s.queue_name}</td>
                  <td><StatusBadge status={s.is_active ? 'active' : 'paused'} /></td>
                  <td title={formatTime(s.next_run_at)}>{s.is_active && s.next_run_at ? formatRelative(s.next_run_at, now) : '—'}</td>
                  <td title={formatTime(s.last_run_at)}>{formatRelative(s.last_run_at, now)}</td>
                  <td class="num">{s.run_count}</td>
                  <td class="actions"><ScheduleActions schedule={s} reload={schedules.reload} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {creating ? (
        <Modal title="New schedule" wide onClose={() => setCreating(false)}>
          <ScheduleForm onCancel={() => setCreating(false)} onSaved={(id) => {
            setCreating(false);
            notify('Schedule created');
            navigate(`/schedules/${id}`);
          }} />
        </Modal>
      ) : null}
    </div>
  );
}

function RunHistory({ id, reloadKey }: { id: string; reloadKey: number }): JSX.Element {
  const runs = useResource((signal) => api<ScheduleRun[]>('GET', `/schedules/${id}/history?limit=50`, { signal }), [id, reloadKey]);
  if (!runs.data) return runs.error ? <ErrorState error={runs.error} what="Run histories" /> : <Loading />;
  if (runs.data.length === 0) return <p class="muted">Not run yet.</p>;
  return (
    <div class="table-wrap">
      <table>
        <thead><tr><th>Started</th><th>Status</th><th>Job</th><th>Error</th></tr></thead>
        <tbody>
          {runs.data.map((r) => (
            <tr key={r.id}>
              <td>{formatTime(r.started_at)}</td>
              <td><StatusBadge status={r.status} /></td>
              <td class="mono">{r.job_id ? <Link href={`/jobs/${r.job_id}`}>{shortId(r.job_id)}</Link> : '—'}</td>
              <td>{r.error_message ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function ScheduleDetail({ id }: { id: string }): JSX.Element {
  const schedule = useResource((signal) => api<Schedule>('GET', `/schedules/${encodeURIComponent(id)}`, { signal }), [id]);
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [runsKey, setRunsKey] = useState(0);
  const reload = () => {
    schedule.reload();
    setRunsKey((k) => k + 1);
  };
  useLiveRefresh(reload, { when: (e) => e.type === 'schedule.triggered' && e.data.schedule_id === id, pollMs: 15_000, livePollMs: 30_000 }, [id]);
  const s = schedule.data;
  if (!s) return <div class="page">{schedule.error ? <ErrorState error={schedule.error} what="Schedules" retry={schedule.reload} /> : <Loading />}</div>;
  return (
    <div class="page">
      <PageHeader title={s.name}>
        <StatusBadge status={s.is_active ? 'active' : 'paused'} />
        <ScheduleActions schedule={s} reload={reload} />
        <button type="button" onClick={() => setEditing(!editing)}>{editing ? 'Close editor' : 'Edit'}</button>
        <button type="button" class="danger" onClick={() => setDeleting(true)}>Delete</button>
      </PageHeader>
      {editing ? (
        <section class="card">
          <ScheduleForm schedule={s} onCancel={() => setEditing(false)} onSaved={() => {
            setEditing(false);
            notify('Schedule saved');
            reload();
          }} />
        </section>
      ) : (
        <div class="detail-grid">
          <section class="card">
            <Facts items={[
              ['Cron', <span class="mono">{s.cron_expression}</span>],
              ['Time zone', s.timezone],
              ['Queue', <Link href={`/jobs?queue=${encodeURIComponent(s.queue_name)}`}>{s.queue_name}</Link>],
              ['Next run', s.is_active ? formatTime(s.next_run_at) : 'paused'],
              ['Last run', formatTime(s.last_run_at)],
              ['Runs', s.run_count],
              ['Priority / retries / timeout', `${s.priority} / ${s.max_retries} / ${s.timeout_seconds} s`],
              ['Description', s.description],
            ]} />
          </section>
          <section class="card"><h2>Payload template</h2><JsonBlock value={s.payload_template} /></section>
        </div>
      )}
      <section class="card">
        <h2>Run history</h2>
        <RunHistory id={s.id} reloadKey={runsKey} />
      </section>
      {deleting ? (
        <ConfirmDialog title={`Delete ${s.name}?`} confirmLabel="Delete" danger onClose={() => setDeleting(false)} onConfirm={async () => {
          await api('DELETE', `/schedules/${s.id}`);
          notify('Schedule deleted');
          navigate('/schedules');
        }}>
          <p>The schedule stops firing. Jobs it already created stay.</p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}
