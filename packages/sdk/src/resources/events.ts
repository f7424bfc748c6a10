/** Realtime events over Server-Sent Events (docs/compatibility.md §4; docs/realtime.md). */
import { fromWire } from '../case.js';
import type { CallOptions } from '../http.js';
import { readSse } from '../sse.js';
import { Resource, seg } from './resource.js';

export interface StreamParams {
  /** Only this queue's events (`/events/queues/{name}`, which adds `QueueStats`). */
  queueName?: string;
  /** Only this job's status changes (`/events/jobs/{id}`; the stream ends after a terminal status). */
  jobId?: string;
  /** Event names to receive, dotted or PascalCase (`job.completed`, `JobFailed`); default all. */
  events?: string[];
  /** Resume after this event id (from a previous stream's `id`): missed events are replayed. */
  lastEventId?: string;
}

export interface RealtimeEvent {
  /** `JobCreated`, `JobStatusChange`, `JobCompleted`, `JobFailed`, `QueueStats`, `job.started`, `job.cancel_requested`, `job.progress`, `job.log`, … */
  type: string;
  /** The event's fields in camelCase (`jobId`, `queueName`, `timestamp`, …). */
  data: Record<string, unknown>;
  /** Resume position after this event: pass it back as `lastEventId`. */
  id: string | undefined;
}

export class EventsResource extends Resource {
  /**
   * One event stream, as an async iterable that ends when the server ends
   * the stream (after 30 minutes, or a job's terminal status). Abort
   * `options.signal` to close it. Does not reconnect: loop with the last `id`.
   *
   * ```ts
   * for await (const event of spool.events.stream({ queueName: 'emails', events: ['job.failed'] }, { signal })) …
   * ```
   */
  async *stream(params: StreamParams = {}, options?: CallOptions): AsyncGenerator<RealtimeEvent> {
    const path = params.jobId
      ? `/api/v1/events/jobs/${seg(params.jobId)}`
      : params.queueName
        ? `/api/v1/events/queues/${seg(params.queueName)}`
        : '/api/v1/events';
    const query = { events: params.events?.length ? params.events.join(',') : undefined, lastEventId: params.lastEventId };
    const response = await this.open({ method: 'GET', path, query }, options);
    if (!response.body) return;
    const body = response.body as unknown as AsyncIterable<Uint8Array>;
    try {
      for await (const message of readSse(body)) {
        let envelope: { type?: unknown; data?: unknown };
        try {
          envelope = JSON.parse(message.data);
        } catch {
          continue; // not an envelope: nothing a client can act on
        }
        if (typeof envelope?.type !== 'string') continue;
        const data = envelope.data !== null && typeof envelope.data === 'object' ? (fromWire(envelope.data) as Record<string, unknown>) : {};
        yield { type: envelope.type, data, id: message.lastEventId };
      }
    } finally {
      // Leaving the loop early (break, abort) must close the connection.
      await response.body.cancel().catch(() => {});
    }
  }
}
