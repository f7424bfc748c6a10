import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { useStore } from './use-store';
import { liveStatus, onLiveEvent, onLiveStatus, type LiveEvent, type LiveStatus } from './events';

export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Loads again, keeping the current data on screen meanwhile. */
  reload(): void;
}

/**
 * Loads data for a view. When `deps` change the old data is dropped and the
 * previous request aborted; `reload()` refreshes in place (live updates).
 */
export function useResource<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Resource<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: null, loading: true });
  const loader = useRef(load);
  loader.current = load;
  const controller = useRef<AbortController | null>(null);
  const generation = useRef(0);

  const run = useCallback((fresh: boolean) => {
    controller.current?.abort();
    const abort = new AbortController();
    controller.current = abort;
    const mine = ++generation.current;
    setState((s) => ({ data: fresh ? undefined : s.data, error: fresh ? null : s.error, loading: true }));
    loader.current(abort.signal).then(
      (data) => {
        if (mine === generation.current) setState({ data, error: null, loading: false });
      },
      (error: unknown) => {
        if (abort.signal.aborted || mine !== generation.current) return;
        setState((s) => ({ data: s.data, error, loading: false }));
      },
    );
  }, []);

  useEffect(() => {
    run(true);
    return () => controller.current?.abort();
  }, deps);

  const reload = useCallback(() => run(false), [run]);
  return { ...state, reload };
}

export function useLiveStatus(): LiveStatus {
  return useStore(liveStatus, onLiveStatus);
}

interface LiveRefreshOptions {
  /** Which events should refresh the view; none = only polling. */
  when?: (event: LiveEvent) => boolean;
  /** Polling period while the event stream is not live (ms). */
  pollMs?: number;
  /** Polling period even while live, for data without events (ms); 0 = none. */
  livePollMs?: number;
}

const THROTTLE_MS = 750;

/**
 * Keeps a view current: reloads on matching live events (at most every
 * 750 ms however busy the queue is), and polls when the stream is down or the
 * data has no events. Nothing runs while the tab is hidden.
 */
export function useLiveRefresh(reload: () => void, options: LiveRefreshOptions, deps: readonly unknown[] = []): void {
  const status = useLiveStatus();
  const reloadRef = useRef(reload);
  reloadRef.current = reload;
  const whenRef = useRef(options.when);
  whenRef.current = options.when;

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    let last = 0;
    const fire = () => {
      timer = null;
      if (document.hidden) return;
      last = Date.now();
      reloadRef.current();
    };
    const unsubscribe = onLiveEvent((event) => {
      if (!whenRef.current?.(event) || timer) return;
      timer = setTimeout(fire, Math.max(0, last + THROTTLE_MS - Date.now()));
    });
    return () => {
      unsubscribe();
      if (timer) clearTimeout(timer);
    };
  }, deps);

  const period = status === 'live' ? (options.livePollMs ?? 0) : (options.pollMs ?? 10_000);
  useEffect(() => {
    if (!period) return;
    const interval = setInterval(() => {
      if (!document.hidden) reloadRef.current();
    }, period);
    return () => clearInterval(interval);
  }, [period, ...deps]);
}

/** The current time, re-rendered every `everyMs` (for "3 s ago" labels). */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    const interval = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(interval);
  }, [everyMs]);
  return now;
}
