import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useStore } from './lib/use-store';
import { Toasts } from './components/toast';
import { Link } from './components/ui';
import { signOut } from './lib/auth';
import { useLiveStatus } from './lib/hooks';
import { match, useLocation, type Location } from './lib/router';
import { getSession, onSessionChange } from './lib/session';
import { DeadLetters } from './pages/dead-letters';
import { JobDetail } from './pages/job-detail';
import { Jobs } from './pages/jobs';
import { Operator } from './pages/operator';
import { Overview } from './pages/overview';
import { QueueDetail } from './pages/queue-detail';
import { Queues } from './pages/queues';
import { ScheduleDetail, Schedules } from './pages/schedules';
import { Settings } from './pages/settings';
import { SignIn } from './pages/sign-in';
import { Workers } from './pages/workers';
import { WorkflowDetail, Workflows } from './pages/workflows';

const NAV: [string, string][] = [
  ['/', 'Overview'],
  ['/queues', 'Queues'],
  ['/jobs', 'Jobs'],
  ['/dead-letters', 'Dead letters'],
  ['/schedules', 'Schedules'],
  ['/workers', 'Workers'],
  ['/workflows', 'Workflows'],
  ['/settings', 'Settings'],
  ['/operator', 'Operator'],
];

type Route = [pattern: string, render: (params: Record<string, string>, location: Location) => JSX.Element];

const ROUTES: Route[] = [
  ['/', () => <Overview />],
  ['/queues', () => <Queues />],
  ['/queues/:name', (p) => <QueueDetail name={p.name!} />],
  ['/jobs', (_p, l) => <Jobs query={l.query} />],
  ['/jobs/:id', (p) => <JobDetail id={p.id!} />],
  ['/dead-letters', (_p, l) => <DeadLetters query={l.query} />],
  ['/schedules', () => <Schedules />],
  ['/schedules/:id', (p) => <ScheduleDetail id={p.id!} />],
  ['/workers', (_p, l) => <Workers query={l.query} />],
  ['/workflows', (_p, l) => <Workflows query={l.query} />],
  ['/workflows/:id', (p) => <WorkflowDetail id={p.id!} />],
  ['/settings', (_p, l) => <Settings query={l.query} />],
  ['/operator', () => <Operator />],
];

function section(path: string): string {
  const first = `/${path.split('/').filter(Boolean)[0] ?? ''}`;
  return first;
}

function Page({ location }: { location: Location }): JSX.Element {
  for (const [pattern, render] of ROUTES) {
    const params = match(pattern, location.path);
    if (params) return render(params, location);
  }
  return (
    <div class="empty-state">
      <p class="empty-title">Nothing here</p>
      <p class="muted">There is no page at {location.path}. <Link href="/">Go to the overview</Link>.</p>
    </div>
  );
}

function LiveIndicator(): JSX.Element {
  const status = useLiveStatus();
  const label = { off: 'offline', connecting: 'connecting…', live: 'live', unavailable: 'polling' }[status];
  const title = status === 'unavailable' ? 'The live event stream is not available; pages refresh every few seconds instead.' : `Live updates: ${label}`;
  return <span class={`live live-${status}`} title={title} data-testid="live-status" data-status={status}><span class="live-dot" aria-hidden="true" />{label}</span>;
}

function Shell(): JSX.Element {
  const location = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => setMenuOpen(false), [location.path, location.query.toString()]);
  const current = section(location.path);
  useEffect(() => {
    const label = NAV.find(([href]) => href === current)?.[1];
    document.title = label ? `${label} · Spool` : 'Spool';
  }, [current]);
  return (
    <div class={`shell${menuOpen ? ' menu-open' : ''}`}>
      <header class="topbar">
        <button type="button" class="icon-button menu-button" aria-label="Menu" aria-expanded={menuOpen} onClick={() => setMenuOpen(!menuOpen)}>☰</button>
        <Link href="/" class="brand"><span class="brand-mark" aria-hidden="true" />Spool</Link>
        <div class="topbar-right">
          <LiveIndicator />
          <button type="button" class="link-button" onClick={() => void signOut()}>Sign out</button>
        </div>
      </header>
      <nav class="sidebar" aria-label="Sections">
        {NAV.map(([href, label]) => (
          <Link key={href} href={href} class={current === href ? 'active' : ''} aria-current={current === href ? 'page' : undefined}>{label}</Link>
        ))}
        <a href="/docs" class="nav-external" target="_blank" rel="noreferrer">API docs ↗</a>
      </nav>
      <main class="content" id="content">
        <Page location={location} />
      </main>
      <Toasts />
    </div>
  );
}

export function App(): JSX.Element {
  const signedIn = useStore(() => getSession() !== null, onSessionChange);
  return signedIn ? <Shell /> : <SignIn />;
}
