import { useStore } from './use-store';

/**
 * A History-API router small enough to read in one sitting: the path picks
 * the page, the query string holds every filter (so any view can be shared
 * as a URL), and in-app links never reload the page.
 */

export interface Location {
  path: string;
  query: URLSearchParams;
}

type Listener = () => void;
const listeners = new Set<Listener>();

let last: { href: string; location: Location } | null = null;

/** The current location; the same object until the URL changes (so re-reading does not re-render). */
function snapshot(): Location {
  const href = window.location.pathname + window.location.search;
  if (last?.href !== href) last = { href, location: { path: window.location.pathname, query: new URLSearchParams(window.location.search) } };
  return last.location;
}

function subscribe(listener: Listener): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

function emit(): void {
  for (const listener of listeners) listener();
}

window.addEventListener('popstate', emit);

/** Goes to `url` (path and query) without reloading. */
export function navigate(url: string, options: { replace?: boolean } = {}): void {
  const target = new URL(url, window.location.href);
  if (target.pathname + target.search === window.location.pathname + window.location.search) return;
  if (options.replace) window.history.replaceState(null, '', target.pathname + target.search);
  else window.history.pushState(null, '', target.pathname + target.search);
  window.scrollTo(0, 0);
  emit();
}

/** Replaces some query parameters of the current URL (null or '' removes one). */
export function setQuery(changes: Record<string, string | number | null | undefined>, options: { replace?: boolean } = {}): void {
  const query = new URLSearchParams(window.location.search);
  for (const [key, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === '') query.delete(key);
    else query.set(key, String(value));
  }
  const search = query.toString();
  navigate(window.location.pathname + (search ? `?${search}` : ''), options);
}

export function useLocation(): Location {
  return useStore(snapshot, subscribe);
}

/** Matches `/jobs/:id` style patterns; returns the decoded params or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/').filter(Boolean);
  const have = path.split('/').filter(Boolean);
  if (want.length !== have.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const h = have[i]!;
    if (w.startsWith(':')) {
      try {
        params[w.slice(1)] = decodeURIComponent(h);
      } catch {
        return null;
      }
    } else if (w !== h) return null;
  }
  return params;
}

/** Click handler for <a href>: in-app navigation unless the user asked for a new tab. */
export function linkClick(event: MouseEvent): void {
  const anchor = (event.currentTarget as HTMLAnchorElement | null) ?? null;
  if (!anchor || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  if (anchor.target && anchor.target !== '_self') return;
  const url = new URL(anchor.href);
  if (url.origin !== window.location.origin) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
}
