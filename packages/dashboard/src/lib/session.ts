/**
 * The signed-in session: an access token (JWT from /auth/login) kept in
 * sessionStorage, so it lives as long as the tab and never reaches disk
 * beyond the browser's session store. Every part of the app that needs to
 * know about sign-in and sign-out subscribes here.
 */

export interface Session {
  /** Bearer credential for every API call and the event stream. */
  token: string;
  /** `jwt` normally; `api_key` only when the server has no /auth/login. */
  kind: 'jwt' | 'api_key';
  apiKeyId: string | null;
  organizationId: string | null;
  /** Epoch ms; null when unknown. */
  expiresAt: number | null;
}

const STORAGE_KEY = 'spool.session';

type Listener = () => void;
const listeners = new Set<Listener>();

let current: Session | null = read();
let endedReason: string | null = null;

function read(): Session | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return null;
    const parsed = JSON.parse(raw) as Session;
    if (typeof parsed.token !== 'string') return null;
    if (parsed.expiresAt !== null && parsed.expiresAt <= Date.now()) return null;
    return parsed;
  } catch {
    return null;
  }
}

function emit(): void {
  for (const listener of listeners) listener();
}

export function getSession(): Session | null {
  return current;
}

/** Why the last session ended on its own (revoked key, expiry), for the sign-in page. */
export function sessionEndedReason(): string | null {
  return endedReason;
}

export function startSession(session: Session): void {
  current = session;
  endedReason = null;
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
  emit();
}

/** Clears the session; `reason` is shown on the sign-in page when the server ended it. */
export function endSession(reason: string | null = null): void {
  if (!current) return;
  current = null;
  endedReason = reason;
  sessionStorage.removeItem(STORAGE_KEY);
  emit();
}

export function onSessionChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
