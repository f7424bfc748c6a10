import { dottedName } from '@spool/protocol';
import { API_BASE, api } from './api';
import { getSession, onSessionChange } from './session';

/**
 * One Server-Sent Events connection per tab (GET /api/v1/events?token=…),
 * shared by every page. Pages subscribe to dotted event names; when the
 * stream is unavailable (no realtime on the server, or a network problem)
 * the status says so and pages fall back to polling.
 */

export interface LiveEvent {
  /** Dotted name (`job.created`); PascalCase wire types are mapped (docs/compatibility.md §4). */
  type: string;
  data: Record<string, unknown>;
}

export type LiveStatus = 'off' | 'connecting' | 'live' | 'unavailable';


type EventListener = (event: LiveEvent) => void;
type StatusListener = (status: LiveStatus) => void;

const eventListeners = new Set<EventListener>();
const statusListeners = new Set<StatusListener>();
let source: EventSource | null = null;
let status: LiveStatus = 'off';
let retryTimer: ReturnType<typeof setTimeout> | null = null;
let failures = 0;

function setStatus(next: LiveStatus): void {
  if (next === status) return;
  status = next;
  for (const listener of statusListeners) listener(next);
}

function dispatch(raw: string): void {
  let parsed: { type?: unknown; data?: unknown };
  try {
    parsed = JSON.parse(raw) as { type?: unknown; data?: unknown };
  } catch {
    return;
  }
  if (typeof parsed.type !== 'string') return;
  const event: LiveEvent = {
    type: dottedName(parsed.type),
    data: parsed.data && typeof parsed.data === 'object' ? (parsed.data as Record<string, unknown>) : {},
  };
  for (const listener of eventListeners) listener(event);
}

function close(): void {
  if (retryTimer) clearTimeout(retryTimer);
  retryTimer = null;
  source?.close();
  source = null;
}

function connect(): void {
  close();
  const session = getSession();
  if (!session) {
    setStatus('off');
    return;
  }
  setStatus('connecting');
  const es = new EventSource(`${API_BASE}/events?token=${encodeURIComponent(session.token)}`);
  source = es;
  es.onopen = () => {
    failures = 0;
    setStatus('live');
  };
  es.onmessage = (message) => dispatch(message.data as string);
  es.onerror = () => {
    if (source !== es) return;
    if (es.readyState === EventSource.CONNECTING) {
      setStatus('connecting');
      return;
    }
    // Closed for good (a non-200 answer): find out whether the session is
    // still valid (a 401 here ends it), then retry with a growing delay.
    close();
    setStatus('unavailable');
    failures += 1;
    void api('GET', '/jobs/stats').catch(() => undefined);
    const delay = Math.min(60_000, 2_000 * 2 ** Math.min(failures, 5));
    retryTimer = setTimeout(() => {
      if (getSession()) connect();
    }, delay);
  };
}

onSessionChange(() => {
  if (getSession()) connect();
  else {
    close();
    setStatus('off');
  }
});

/** Opens the stream if signed in (called once at start-up). */
export function startLiveEvents(): void {
  if (getSession() && !source) connect();
}

export function liveStatus(): LiveStatus {
  return status;
}

export function onLiveEvent(listener: EventListener): () => void {
  eventListeners.add(listener);
  return () => eventListeners.delete(listener);
}

export function onLiveStatus(listener: StatusListener): () => void {
  statusListeners.add(listener);
  return () => statusListeners.delete(listener);
}
