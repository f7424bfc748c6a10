/**
 * A minimal Server-Sent Events client over fetch for tests: collects
 * unnamed `data:` events (parsed as JSON) with the `id:` that came with
 * them, and tracks the last event id the way EventSource does.
 */
export interface SseEvent {
  id: string | null;
  /** An `event:` line, if the server sent one (the contract says it must not). */
  name: string | null;
  data: any;
}

export interface SseClient {
  status: number;
  events: SseEvent[];
  lastEventId: string | null;
  /** Resolves with the first event (already received or future) matching `predicate`. */
  waitFor(predicate: (event: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const abort = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const events: SseEvent[] = [];
  const waiters: { predicate: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void }[] = [];
  const client: SseClient = {
    status: response.status,
    events,
    lastEventId: null,
    waitFor(predicate, timeoutMs = 5_000) {
      const found = events.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching SSE event within ${timeoutMs} ms; got ${JSON.stringify(events.map((e) => e.data?.type))}`)), timeoutMs);
        waiters.push({ predicate, resolve: (e) => { clearTimeout(timer); resolve(e); } });
      });
    },
    ended: Promise.resolve(),
    close: () => abort.abort(),
  };
  if (!response.body) return client;
  client.ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let id: string | null = null;
          let name: string | null = null;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') id = value;
            else if (field === 'event') name = value;
            else if (field === 'data') data.push(value);
          }
          if (id !== null) client.lastEventId = id;
          if (data.length === 0) continue;
          const event: SseEvent = { id, name, data: JSON.parse(data.join('\n')) };
          events.push(event);
          for (const waiter of [...waiters]) {
            if (waiter.predicate(event)) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve(event);
            }
          }
        }
      }
    } catch (err) {
      if ((err as Error).name !== 'AbortError') throw err;
    }
  })();
  return client;
}
