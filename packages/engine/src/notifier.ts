import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Queryable } from './db.js';

/** Channel of roundTrip()'s probe notifications. */
const PROBE_CHANNEL = 'spool_probe';

export type NotificationHandler = (payload: string) => void;

export interface NotifierOptions {
  connectionString: string;
  log?: (message: string, err?: unknown) => void;
  /** Called after every (re)connect: notifications sent while disconnected are lost, so listeners re-check. */
  onReconnect?: () => void;
}

/**
 * One LISTEN connection per process, shared by everything that wants
 * wakeups. Reconnects with capped backoff; after a reconnect every handler is
 * called with an empty payload, meaning "something may have happened".
 */
export class Notifier {
  readonly #options: NotifierOptions;
  readonly #handlers = new Map<string, Set<NotificationHandler>>();
  #client: pg.Client | null = null;
  #running = false;
  #retryTimer: NodeJS.Timeout | null = null;
  #attempt = 0;
  #connected: Promise<void> | null = null;

  constructor(options: NotifierOptions) {
    this.#options = options;
  }

  /** Subscribes to a channel; returns the unsubscribe function. */
  listen(channel: string, handler: NotificationHandler): () => void {
    let set = this.#handlers.get(channel);
    if (!set) {
      set = new Set();
      this.#handlers.set(channel, set);
      const client = this.#client;
      if (client) client.query(`LISTEN ${pg.escapeIdentifier(channel)}`).catch((err) => this.#options.log?.('LISTEN failed', err));
    }
    set.add(handler);
    return () => {
      set.delete(handler);
    };
  }

  /** Connects and issues LISTEN for every channel; resolves once listening (or after the first failure, retrying in background). */
  async start(): Promise<void> {
    if (this.#running) return this.#connected ?? undefined;
    this.#running = true;
    this.#connected = this.#connect();
    return this.#connected;
  }

  async stop(): Promise<void> {
    this.#running = false;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = null;
    const client = this.#client;
    this.#client = null;
    if (client) await client.end().catch(() => {});
  }

  get connected(): boolean {
    return this.#client !== null;
  }

  /**
   * Sends a NOTIFY through `db` and waits for it on this LISTEN connection.
   * False when it does not arrive within `timeoutMs`: typically the LISTEN
   * went through a transaction-mode pooler, whose server connection may be
   * handed to someone else after each transaction (docs/pgbouncer.md).
   */
  async roundTrip(db: Queryable, timeoutMs: number): Promise<boolean> {
    // A random marker, not a secret: it only tells this probe's NOTIFY from another's.
    const marker = randomUUID();
    let unlisten: () => void = () => {};
    const arrived = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      unlisten = this.listen(PROBE_CHANNEL, (payload) => {
        if (payload !== marker) return;
        clearTimeout(timer);
        resolve(true);
      });
    });
    try {
      // listen() issues LISTEN without waiting: wait for it before notifying.
      await this.#client?.query('SELECT 1');
      await db.query('SELECT pg_notify($1, $2)', [PROBE_CHANNEL, marker]);
      return await arrived;
    } finally {
      unlisten();
    }
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#options.connectionString, application_name: 'spool-notifier' });
    client.on('notification', (message) => this.#dispatch(message.channel, message.payload ?? ''));
    client.on('error', (err) => this.#lost(client, err));
    client.on('end', () => this.#lost(client, new Error('connection ended')));
    try {
      await client.connect();
      for (const channel of this.#handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      if (!this.#running) {
        await client.end().catch(() => {});
        return;
      }
      const reconnected = this.#attempt > 0;
      this.#client = client;
      this.#attempt = 0;
      if (reconnected) {
        this.#options.onReconnect?.();
        for (const channel of this.#handlers.keys()) this.#dispatch(channel, '');
      }
    } catch (err) {
      client.end().catch(() => {});
      this.#lost(client, err);
    }
  }

  #lost(client: pg.Client, err: unknown): void {
    if (this.#client !== null && this.#client !== client) return;
    if (this.#client === client) this.#client = null;
    if (!this.#running || this.#retryTimer) return;
    this.#attempt += 1;
    const delay = Math.min(100 * 2 ** Math.min(this.#attempt, 6), 5_000);
    this.#options.log?.(`notifier disconnected; reconnecting in ${delay} ms`, err);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      if (this.#running) void this.#connect();
    }, delay);
    this.#retryTimer.unref();
  }

  #dispatch(channel: string, payload: string): void {
    for (const handler of this.#handlers.get(channel) ?? []) {
      try {
        handler(payload);
      } catch (err) {
        this.#options.log?.(`notification handler for ${channel} threw`, err);
      }
    }
  }
}

/** What an enqueue-side NOTIFY on `spool_jobs` says. */
export interface JobsNotice {
  /** "organization_id:queue_name" pairs that gained claimable jobs; null with `all`. */
  queues: string[] | null;
  all: boolean;
  /** Earliest scheduled_at (epoch ms) among newly scheduled jobs, if any. */
  scheduledAt: number | null;
}

export const JOBS_CHANNEL = 'spool_jobs';

/** Parses a `spool_jobs` payload; an empty or unreadable one means "anything may have changed". */
export function parseJobsNotice(payload: string): JobsNotice {
  if (!payload) return { queues: null, all: true, scheduledAt: null };
  try {
    const parsed = JSON.parse(payload) as { q?: string[] | null; all?: boolean; s?: number | null };
    return { queues: parsed.q ?? (parsed.all ? null : []), all: parsed.all === true, scheduledAt: parsed.s ?? null };
  } catch {
    return { queues: null, all: true, scheduledAt: null };
  }
}
