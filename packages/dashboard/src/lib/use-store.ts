import { useEffect, useState } from 'preact/hooks';

/**
 * Reads a value kept outside the component tree (live status, session,
 * location) and re-renders when it changes. It reads again right after
 * subscribing: effects run after the first paint, and a change that lands
 * in between (an EventSource opening on a busy machine) would otherwise
 * never reach the component.
 */
export function useStore<T>(read: () => T, subscribe: (onChange: () => void) => () => void): T {
  const [value, setValue] = useState(read);
  useEffect(() => {
    const update = () => setValue(() => read());
    const unsubscribe = subscribe(update);
    update();
    return unsubscribe;
  }, []);
  return value;
}
