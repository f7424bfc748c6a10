import { historyReplay, type Db } from '@spool/engine';
import { envelope, eventFromHistory, type RealtimeEvent } from './events.js';
import type { HubSubscriber, RealtimeHub } from './hub.js';
import { StreamPosition, type HubBatch } from './position.js';

export interface StreamOptions {
  organizationId: string;
  /** Narrows a replay to one job or queue (the live filter is `onEvent`'s business). */
  jobId?: string | null;
  queueName?: string | null;
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
 * One realtime client's subscription to the hub. Batches that arrive while
 * a resume replay is running are buffered (bounded) and then applied, so the
 * replay and the live feed meet without a hole or a duplicate.
 */
export class HistoryStream implements HubSubscriber {
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
   * resume point, replays what the client missed (from the database); then
   * runs `beforeLive` and applies the live batches that arrived meanwhile. Returns false if the resume point was too
   * old to replay (the client then starts from now, after an Error event).
   */
  async open(hub: RealtimeHub, db: Db, resume: StreamPosition | null, hooks: OpenHooks = {}): Promise<boolean> {
    const { scannedTo, gaps } = await hub.attach(this);
    hooks.attached?.();
    let complete = true;
    if (!resume) {
      this.#position = new StreamPosition(scannedTo, gaps);
    } else {
      complete = await this.#replay(db, resume, scannedTo, gaps, hub);
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

  async #replay(db: Db, resume: StreamPosition, upTo: number, hubGaps: number[], hub: RealtimeHub): Promise<boolean> {
    const position = resume;
    const wanted = [...position.missing].filter((id) => id <= upTo);
    const seen = new Set<number>();
    let after = position.covered;
    for (let page = 0; page < REPLAY_MAX_PAGES; page++) {
      const rows = await historyReplay(db, {
        organizationId: this.#options.organizationId,
        after,
        upTo,
        ids: page === 0 ? wanted : [],
        jobId: this.#options.jobId,
        queueName: this.#options.queueName,
        limit: REPLAY_PAGE,
      });
      if (this.#closed) return true;
      for (const row of rows) seen.add(row.id);
      const last = rows.length === REPLAY_PAGE ? rows[rows.length - 1]!.id : upTo;
      position.apply({ events: rows.map(eventFromHistory), scannedTo: Math.max(last, position.covered), gaps: hubGaps }, (event, token) => this.#emit(event, token));
      if (rows.length < REPLAY_PAGE) {
        // Ids the client lacks that are still not visible: the hub watches them from now on.
        const pending = wanted.filter((id) => !seen.has(id));
        hub.addGaps(pending);
        position.finish(upTo, [...new Set([...hubGaps, ...pending])].sort((a, b) => a - b));
        this.#position = position;
        return true;
      }
      after = last;
    }
    this.#options.onEvent({
      id: 0,
      organizationId: this.#options.organizationId,
      jobId: '',
      queueName: '',
      fromStatus: null,
      toStatus: null,
      envelopes: [envelope('Error', { message: 'Last-Event-ID is too far behind to replay; continuing from now' })],
    }, () => String(upTo));
    this.#position = new StreamPosition(upTo, hubGaps);
    return false;
  }

  #apply(batch: HubBatch): void {
    this.#position!.apply(batch, (event, token) => this.#emit(event, token));
  }

  #emit(event: RealtimeEvent, token: () => string): void {
    if (this.#closed || event.organizationId !== this.#options.organizationId) return;
    this.#options.onEvent(event, token);
  }

  #overflow(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#buffer = null;
    this.#options.onOverflow();
  }
}
