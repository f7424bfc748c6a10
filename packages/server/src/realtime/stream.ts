import type { Db } from '@spool/engine';
import { envelope, type RealtimeEvent } from './events.js';
import type { HubSubscriber, LogPoint, RealtimeHub } from './hub.js';
import { LOG_SOURCES, type LogSource } from './logs.js';
import { LogPosition, StreamPosition, type HubBatch } from './position.js';

export interface StreamOptions {
  organizationId: string;
  /** Narrows a replay to one job or queue (the live filter is `onEvent`'s business). */
  jobId?: string | null;
  queueName?: string | null;
  /** Whether the caller's key may see the event (its queue: realtime/authorization.ts); events it may not are skipped. */
  visible(event: RealtimeEvent): boolean;
  /** Called for each event of this organization not yet given to the client; `token` is its resume point. */
  onEvent(event: RealtimeEvent, token: () => string): void;
  /** The client fell too far behind (bounded memory): close it. */
  onOverflow(): void;
}

export interface OpenHooks {
  attached?: () => void;
  beforeLive?: () => Promise<void>;
}

const MAX_BUFFERED_BATCHES = 1000;
const REPLAY_PAGE = 1000;
const REPLAY_MAX_PAGES = 50;

/**
 * One realtime client's subscription to the hub, over every log. Batches
 * that arrive while a resume replay is running are buffered (bounded) and
 * then applied, so the replay and the live feed meet without a hole or a
 * duplicate.
 */
export class EventStream implements HubSubscriber {
  readonly #options: StreamOptions;
  #position: StreamPosition | null = null;
  #buffer: HubBatch[] | null = [];
  #closed = false;

  constructor(options: StreamOptions) {
    this.#options = options;
  }

  onBatch(batch: HubBatch): void {
    if (this.#closed) return;
    if (this.#buffer) {
      this.#buffer.push(batch);
      if (this.#buffer.length > MAX_BUFFERED_BATCHES) this.#overflow();
      return;
    }
    this.#apply(batch);
  }

  /**
   * Attaches to the hub (then calls `attached`: from here on no event is
   * missed, so that is when a client may be told it is connected); with a
   * resume point, replays what the client missed of each log (from the
   * database); then runs `beforeLive` and applies the live batches that
   * arrived meanwhile. Returns false if the resume point was too old to
   * replay in some log (the client then continues from now there, after an
   * Error event).
   */
  async open(hub: RealtimeHub, db: Db, resume: StreamPosition | null, hooks: OpenHooks = {}): Promise<boolean> {
    const points = await hub.attach(this);
    hooks.attached?.();
    // Every log has its position before anything is sent: a token given
    // during the replay of one log must name where the client is in the others.
    const position = new StreamPosition();
    for (const source of LOG_SOURCES) {
      const point = points[source.name];
      position.logs[source.name] = resume?.logs[source.name] ?? LogPosition.atRow(point.scannedTo, point.gaps, source.eventsPerRow);
    }
    this.#position = position;
    let complete = true;
    for (const source of LOG_SOURCES) {
      if (resume?.logs[source.name] && !(await this.#replay(db, source, points[source.name], hub))) complete = false;
    }
    // e.g. reading a job's current status: after attaching, before live events flow.
    if (hooks.beforeLive) await hooks.beforeLive();
    const buffered = this.#buffer ?? [];
    this.#buffer = null;
    for (const batch of buffered) if (!this.#closed) this.#apply(batch);
    return complete;
  }

  close(hub: RealtimeHub): void {
    this.#closed = true;
    hub.detach(this);
  }

  /** Replays one log from the client's position up to where the hub stood when it attached. */
  async #replay(db: Db, source: LogSource, point: LogPoint, hub: RealtimeHub): Promise<boolean> {
    const position = this.#position!;
    const log = position.logs[source.name]!;
    // Rows (what the hub follows) and event ids (what a position covers).
    const upTo = point.scannedTo;
    const upToEvent = upTo * source.eventsPerRow + source.eventsPerRow - 1;
    const wanted = [...log.missing].filter((row) => row <= upTo);
    const seen = new Set<number>();
    let after = log.covered;
    for (let page = 0; page < REPLAY_MAX_PAGES; page++) {
      const events = await source.replay(db, {
        organizationId: this.#options.organizationId,
        after,
        upTo: upToEvent,
        ids: page === 0 ? wanted : [],
        jobId: this.#options.jobId,
        queueName: this.#options.queueName,
        limit: REPLAY_PAGE,
      });
      if (this.#closed) return true;
      for (const event of events) seen.add(event.row);
      // A full page may end inside a row: only the rows before it are done.
      const done = events.length === REPLAY_PAGE ? events[events.length - 1]!.row - 1 : upTo;
      position.apply({ log: source.name, events, scannedTo: done, gaps: point.gaps }, (event, token) => this.#emit(event, token));
      if (events.length < REPLAY_PAGE) {
        // Ids the client lacks that are still not visible: the hub watches them from now on.
        const pending = wanted.filter((row) => !seen.has(row));
        hub.addGaps(source.name, pending);
        log.finish(upTo, [...new Set([...point.gaps, ...pending])].sort((a, b) => a - b));
        return true;
      }
      after = events[events.length - 1]!.id;
    }
    position.logs[source.name] = LogPosition.atRow(upTo, point.gaps, source.eventsPerRow);
    this.#options.onEvent({
      log: source.name,
      id: 0,
      row: 0,
      organizationId: this.#options.organizationId,
      jobId: '',
      queueName: '',
      fromStatus: null,
      toStatus: null,
      eventType: null,
      envelopes: [envelope('Error', { message: 'Last-Event-ID is too far behind to replay; continuing from now' })],
    }, () => position.token());
    return false;
  }

  #apply(batch: HubBatch): void {
    this.#position!.apply(batch, (event, token) => this.#emit(event, token));
  }

  #emit(event: RealtimeEvent, token: () => string): void {
    if (this.#closed || event.organizationId !== this.#options.organizationId || !this.#options.visible(event)) return;
    this.#options.onEvent(event, token);
  }

  #overflow(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#buffer = null;
    this.#options.onOverflow();
  }
}
