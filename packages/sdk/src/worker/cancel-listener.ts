/**
 * Listens on the queue's realtime stream (or, for a worker of several queues,
 * the organization's) for `job.cancel_requested`, so that
 * cancelling a running job reaches its handler within moments instead of at
 * the next heartbeat (which stays the fallback: a server without the event,
 * a dropped stream). Reconnects with backoff and resumes from the last event
 * id, so a request made while the stream was down is replayed. Gives up
 * quietly on a server without the stream (404).
 */
import { AuthenticationError, AuthorizationError, NotFoundError } from '../errors.js';
import { sleep } from '../http.js';
import type { EventsResource } from '../resources/events.js';

export const CANCEL_EVENT = 'job.cancel_requested';

export interface CancelListenerOptions {
  /** The queue whose stream to follow; undefined follows the organization's (every queue the key may use). */
  queue: string | undefined;
  /** Called for a running job that someone asked to stop, with the worker that holds it. */
  onCancel(jobId: string, workerId: string | null): void;
  onError(err: unknown): void;
  /** First reconnect delay; doubles up to 30 s. */
  retryDelayMs: number;
}

const MAX_RETRY_DELAY_MS = 30_000;
const HEALTHY_STREAM_MS = 5_000;

export class CancelListener {
  readonly #events: Pick<EventsResource, 'stream'>;
  readonly #options: CancelListenerOptions;
  readonly #abort = new AbortController();
  #loop: Promise<void> | null = null;
  #lastEventId: string | undefined;

  constructor(events: Pick<EventsResource, 'stream'>, options: CancelListenerOptions) {
    this.#events = events;
    this.#options = options;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#abort.abort(new Error('worker stopped'));
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { signal } = this.#abort;
    let delay = this.#options.retryDelayMs;
    while (!signal.aborted) {
      const openedAt = Date.now();
      try {
        const stream = this.#events.stream({ queueName: this.#options.queue, events: [CANCEL_EVENT], lastEventId: this.#lastEventId }, { signal });
        for await (const event of stream) {
          if (event.id !== undefined) this.#lastEventId = event.id;
          if (event.type === CANCEL_EVENT && typeof event.data.jobId === 'string') {
            this.#options.onCancel(event.data.jobId, typeof event.data.workerId === 'string' ? event.data.workerId : null);
          }
        }
        // Ended by the server (Spool ends streams after 30 min): reconnect.
      } catch (err) {
        if (signal.aborted) return;
        // No stream on this server, or this key may not use it: heartbeats alone will do.
        if (err instanceof NotFoundError) return;
        this.#options.onError(err);
        if (err instanceof AuthenticationError || err instanceof AuthorizationError) return;
      }
      // A stream that lived a while was healthy: reconnect at once. One that keeps
      // failing or ending right away backs off.
      if (Date.now() - openedAt > HEALTHY_STREAM_MS) {
        delay = this.#options.retryDelayMs;
        continue;
      }
      await sleep(delay, signal).catch(() => {});
      delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
    }
  }
}
