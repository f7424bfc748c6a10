/**
 * The outbox relay: forwards committed `spool_outbox` rows to Spool exactly
 * once, in order per ordering key (docs/transactional-enqueue.md).
 *
 * One batch is one transaction on the application's database:
 *  1. take work: rows without a key are locked (FOR UPDATE SKIP LOCKED); keys
 *     are claimed with a transaction-level advisory lock per key (try-lock:
 *     a key another relay holds is skipped), and only then are their rows
 *     read, in a new statement, so the read sees everything the previous
 *     holder of the key committed;
 *  2. send: each row with the idempotency key `outbox:<outbox_id>:<row id>`
 *     (the job's own key when it has one). A key's rows go one request after
 *     another in id order; different keys and keyless rows go side by side, in
 *     bulk requests where the job's fields allow;
 *  3. mark the rows Spool answered for (forwarded_at, spool_job_id), record
 *     refusals (attempts, last_error, next_attempt_at), commit.
 * Killed anywhere before the commit, the transaction rolls back, its locks go
 * with the connection, and the rows are sent again: Spool answers a repeated
 * idempotency key with the job it already has (`created: false`), which the
 * relay records like a fresh one. So each row becomes one job.
 */
import { LIMITS } from '@spool/protocol';
import { fromWire } from '../case.js';
import {
  AuthenticationError,
  NotFoundError,
  RateLimitError,
  SpoolApiError,
  SpoolNetworkError,
  SpoolTimeoutError,
} from '../errors.js';
import type { BulkJobItem, CreateJobParams, JobsResource } from '../resources/jobs.js';
import type { Api } from '../resources/resource.js';
import type { OutboxQueryable } from './schema.js';

/** A connection taken from a pool, given back with `release` (node-postgres's `PoolClient`). */
export interface OutboxSession extends OutboxQueryable {
  /** A truthy argument closes the connection instead of returning it to the pool. */
  release(err?: Error | boolean): void;
}

/** Where the relay gets connections to the application's database (a node-postgres `Pool`). */
export interface OutboxPool {
  connect(): Promise<OutboxSession>;
}

export interface OutboxRelayOptions {
  /** The application's database. */
  pool: OutboxPool;
  /** Spool (a `SpoolClient`); only `jobs.create` and `jobs.bulk` are used. */
  spool: { jobs: Pick<Api<JobsResource>, 'create' | 'bulk'> };
  /** Rows per transaction, 1..1000. Default 100. */
  batchSize?: number;
  /** Rows of one ordering key per transaction (they are sent one after another). Default 10. */
  rowsPerKey?: number;
  /** Requests to Spool at once. Default 4. */
  concurrency?: number;
  /** Wait before looking again when a batch was not full. Default 200 ms. */
  pollMs?: number;
  /** Forwarded rows are deleted this long after forwarding; null keeps them. Default 1 h. */
  keepForwardedMs?: number | null;
  /** Told about batches, refusals, outages and deletions (for logs). */
  onEvent?: (event: OutboxRelayEvent) => void;
}

export interface OutboxBatchResult {
  /** Rows this batch took. */
  rows: number;
  /** Rows marked forwarded: `created` new jobs plus `existing` (Spool already had the idempotency key). */
  forwarded: number;
  created: number;
  existing: number;
  /** Rows Spool refused; retried with backoff, holding back later rows of their key. */
  failed: number;
  /** Spool could not be used (unreachable, 5xx, 429, a refused API key, a plan limit): the batch stopped there. */
  unavailable?: unknown;
  durationMs: number;
}

export interface OutboxStatus {
  /** Rows not forwarded yet. */
  waiting: number;
  /** Of those, rows whose last send failed. */
  failing: number;
  /** When the oldest waiting row was written. */
  oldestWaitingAt: Date | null;
  /** Its age by the database's clock: how far the relay is behind. */
  lagMs: number;
}

export interface OutboxFailingRow {
  id: string;
  queueName: string;
  orderingKey: string | null;
  attempts: number;
  lastError: string;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

export type OutboxRelayEvent =
  | { type: 'batch'; result: OutboxBatchResult }
  | { type: 'row_failed'; id: string; queueName: string; orderingKey: string | null; attempts: number; error: string; retryInMs: number }
  | { type: 'unavailable'; source: 'spool' | 'database'; error: unknown; retryInMs: number }
  | { type: 'pruned'; deleted: number };

export interface OutboxDrainResult extends Omit<OutboxBatchResult, 'durationMs'> {
  batches: number;
  /** Forwarded rows deleted (older than keepForwardedMs). */
  pruned: number;
  status: OutboxStatus;
}

/** The outbox's identity and the keys whose oldest waiting row is due, oldest first. */
const HEADS_SQL = `
SELECT (SELECT outbox_id::text FROM spool_outbox_meta) AS outbox_id,
       ARRAY(
         SELECT o.ordering_key
         FROM spool_outbox o
         WHERE o.forwarded_at IS NULL AND o.ordering_key IS NOT NULL
           AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= now())
           -- the oldest waiting row of its key: later rows wait for it
           AND NOT EXISTS (
             SELECT 1 FROM spool_outbox e
             WHERE e.ordering_key = o.ordering_key AND e.forwarded_at IS NULL AND e.ordering_key IS NOT NULL AND e.id < o.id)
         ORDER BY o.id
         LIMIT $1) AS keys`;

/**
 * Claims up to $2 of the keys $1 (oldest first) for this transaction. A
 * try-lock: a key another relay holds is skipped, not waited for (the LIMIT
 * stops the scan, so no more keys are locked than used). Writers lock another
 * class (the table's trigger), so the application never waits for a relay.
 */
const LOCK_KEYS_SQL = `
SELECT k AS key FROM unnest($1::text[]) AS k
WHERE pg_try_advisory_xact_lock(hashtext('spool_outbox relays'), hashtext(k))
LIMIT $2`;

/**
 * The waiting rows of the keys this transaction holds, up to $2 per key in id
 * order. A statement of its own after the locks: its snapshot includes every
 * commit of the relay that held a key before.
 */
const KEYED_ROWS_SQL = `
SELECT r.*
FROM unnest($1::text[]) AS k(key)
CROSS JOIN LATERAL (
  SELECT o.id::text AS id, o.queue_name, o.job, o.ordering_key, o.attempts,
         (o.next_attempt_at IS NULL OR o.next_attempt_at <= now()) AS due
  FROM spool_outbox o
  WHERE o.ordering_key = k.key AND o.forwarded_at IS NULL AND o.ordering_key IS NOT NULL
  ORDER BY o.id
  LIMIT $2
) r`;

/** Due rows without a key, oldest first; rows another relay holds are skipped. */
const UNKEYED_ROWS_SQL = `
SELECT o.id::text AS id, o.queue_name, o.job, o.ordering_key, o.attempts, true AS due
FROM spool_outbox o
WHERE o.forwarded_at IS NULL AND o.ordering_key IS NULL
  AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= now())
ORDER BY o.id
LIMIT $1
FOR UPDATE SKIP LOCKED`;

const MARK_FORWARDED_SQL = `
UPDATE spool_outbox o
SET forwarded_at = now(), spool_job_id = v.job_id, attempts = o.attempts + 1, last_error = NULL, next_attempt_at = NULL
FROM unnest($1::bigint[], $2::text[]) AS v(id, job_id)
WHERE o.id = v.id`;

/** A refusal sets next_attempt_at (backoff); an outage ($3 null) only records the error. */
const MARK_FAILED_SQL = `
UPDATE spool_outbox o
SET attempts = o.attempts + 1, last_error = v.error,
    next_attempt_at = CASE WHEN v.delay_ms IS NULL THEN o.next_attempt_at ELSE now() + v.delay_ms * interval '1 millisecond' END
FROM unnest($1::bigint[], $2::text[], $3::int[]) AS v(id, error, delay_ms)
WHERE o.id = v.id`;

/** Each half reads its own partial index (a plain "forwarded_at IS NULL" could use neither). */
const STATUS_SQL = `
WITH waiting AS (
  SELECT created_at, last_error FROM spool_outbox WHERE forwarded_at IS NULL AND ordering_key IS NULL
  UNION ALL
  SELECT created_at, last_error FROM spool_outbox WHERE forwarded_at IS NULL AND ordering_key IS NOT NULL
)
SELECT count(*)::int AS waiting, count(last_error)::int AS failing, min(created_at) AS oldest,
       coalesce(extract(epoch FROM now() - min(created_at)) * 1000, 0)::float8 AS lag_ms
FROM waiting`;

const FAILING_SQL = `
SELECT id::text AS id, queue_name, ordering_key, attempts, last_error, next_attempt_at, created_at
FROM (
  SELECT * FROM spool_outbox WHERE forwarded_at IS NULL AND ordering_key IS NULL AND last_error IS NOT NULL
  UNION ALL
  SELECT * FROM spool_outbox WHERE forwarded_at IS NULL AND ordering_key IS NOT NULL AND last_error IS NOT NULL
) f
ORDER BY f.id
LIMIT $1`;

/** At most 1,000 rows per statement, so that no deletion holds many locks or runs long. */
const PRUNE_SQL = `
WITH doomed AS (
  SELECT id FROM spool_outbox
  WHERE forwarded_at IS NOT NULL AND forwarded_at < now() - $1 * interval '1 millisecond'
  ORDER BY forwarded_at
  LIMIT 1000
  FOR UPDATE SKIP LOCKED
)
DELETE FROM spool_outbox o USING doomed d WHERE o.id = d.id`;

/**
 * The fields of a bulk item (packages/server/src/routes/jobs-bulk.ts). A job
 * with any other field (parent_job_id, job_key, one this relay does not know)
 * goes through POST /jobs, which takes every create field: a bulk item would
 * drop it with only a warning.
 */
const BULK_FIELDS: ReadonlySet<string> = new Set([
  'payload', 'priority', 'idempotency_key', 'scheduled_at', 'expires_at', 'max_retries', 'timeout_seconds',
  'tags', 'completion_webhook', 'concurrency_key', 'fairness_key', 'job_key', 'traceparent', 'tracestate',
]);
/** The contract's bulk size, which every server takes. */
const BULK_CHUNK = 100;
const ROW_BACKOFF_MAX_MS = 5 * 60_000;
/** Keys looked at per batch, per row of the batch. */
const KEY_CANDIDATES = 4;
const OUTAGE_BACKOFF_MAX_MS = 30_000;
const ERROR_TEXT_MAX = 2000;

interface WaitingRow {
  id: string;
  queue_name: string;
  job: Record<string, unknown>;
  ordering_key: string | null;
  attempts: number;
  due: boolean;
}

type Answer = { row: WaitingRow; jobId: string; created: boolean } | { row: WaitingRow; error: string };

/** Backoff of a refused row after `attempts` earlier sends: 1 s, 2 s, 4 s … 5 min. */
export function outboxRowBackoffMs(attempts: number): number {
  return Math.min(ROW_BACKOFF_MAX_MS, 1000 * 2 ** Math.min(attempts, 20));
}

/** Spool itself cannot take jobs now (as opposed to refusing this job). */
export function isSpoolOutage(err: unknown): boolean {
  if (err instanceof SpoolNetworkError || err instanceof SpoolTimeoutError) return true;
  if (!(err instanceof SpoolApiError)) return true;
  if (err.status >= 500 || err instanceof RateLimitError || err instanceof AuthenticationError) return true;
  if (err.code === 'LIMIT_EXCEEDED') return true;
  // Not Spool's own 404 for a missing job: the URL points at the wrong place.
  return err instanceof NotFoundError && /^Route \S+ \S+ not found/.test(err.message);
}

function describeRefusal(err: unknown): string {
  if (err instanceof SpoolApiError) return `${err.message} (${err.status} ${err.code})`;
  return err instanceof Error ? err.message : String(err);
}

function byId(a: { id: string }, b: { id: string }): number {
  return a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Runs `tasks` with at most `limit` at once. */
async function limited<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, tasks.length) }, async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]!();
    }
  });
  await Promise.all(lanes);
  return results;
}

/**
 * Forwards the outbox to Spool. `start()` runs it until `stop()`;
 * `drain()` forwards what is due and returns; `runBatch()` is one transaction.
 * Several relays (processes or instances) may run against one outbox.
 */
export class OutboxRelay {
  readonly #pool: OutboxPool;
  readonly #spool: OutboxRelayOptions['spool'];
  readonly #batchSize: number;
  readonly #rowsPerKey: number;
  readonly #concurrency: number;
  readonly #pollMs: number;
  readonly #keepForwardedMs: number | null;
  readonly #onEvent: (event: OutboxRelayEvent) => void;
  #loop: Promise<void> | null = null;
  #stopping = false;
  #wake: (() => void) | null = null;
  #lastPrune = 0;

  constructor(options: OutboxRelayOptions) {
    this.#pool = options.pool;
    this.#spool = options.spool;
    this.#batchSize = options.batchSize ?? 100;
    this.#rowsPerKey = options.rowsPerKey ?? 10;
    this.#concurrency = options.concurrency ?? 4;
    this.#pollMs = options.pollMs ?? 200;
    this.#keepForwardedMs = options.keepForwardedMs === undefined ? 3_600_000 : options.keepForwardedMs;
    const listener = options.onEvent;
    // A listener that throws must not stop the relay (or fail a batch whose rows Spool already took).
    this.#onEvent = (event) => {
      try {
        listener?.(event);
      } catch {
        // ignored
      }
    };
    if (!Number.isInteger(this.#batchSize) || this.#batchSize < 1 || this.#batchSize > LIMITS.bulkJobsMax) throw new RangeError(`batchSize must be an integer from 1 to ${LIMITS.bulkJobsMax}`);
    if (!Number.isInteger(this.#rowsPerKey) || this.#rowsPerKey < 1) throw new RangeError('rowsPerKey must be a positive integer');
    if (!Number.isInteger(this.#concurrency) || this.#concurrency < 1) throw new RangeError('concurrency must be a positive integer');
  }

  /** The outbox's identity (spool_outbox_meta); throws when the outbox tables are missing. */
  async outboxId(): Promise<string> {
    const session = await this.#pool.connect();
    try {
      const result = await session.query('SELECT outbox_id::text AS outbox_id FROM spool_outbox_meta');
      const row = result.rows[0] as { outbox_id: string } | undefined;
      if (!row) throw new Error('spool_outbox_meta has no row: run the outbox DDL again (ensureOutboxTable, or `spool outbox init`)');
      await session.query('SELECT 1 FROM spool_outbox LIMIT 0');
      session.release();
      return row.outbox_id;
    } catch (err) {
      session.release(err instanceof Error ? err : true);
      throw err;
    }
  }

  /** Starts forwarding in the background until `stop()`. Safe to call twice. */
  start(): void {
    if (this.#loop) return;
    this.#stopping = false;
    this.#loop = this.#run();
  }

  /** Stops after the batch in progress (which is finished and committed). Safe to call twice. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    await this.#loop;
    this.#loop = null;
  }

  async #run(): Promise<void> {
    let outages = 0;
    while (!this.#stopping) {
      let result: OutboxBatchResult | null = null;
      let dbError: unknown = null;
      try {
        result = await this.runBatch();
      } catch (err) {
        dbError = err;
      }
      const outage = dbError ?? result?.unavailable;
      if (outage !== undefined && outage !== null) {
        outages += 1;
        const retryInMs = Math.min(OUTAGE_BACKOFF_MAX_MS, 500 * 2 ** Math.min(outages, 10));
        this.#onEvent({ type: 'unavailable', source: dbError ? 'database' : 'spool', error: outage, retryInMs });
        await this.#sleep(retryInMs);
        continue;
      }
      outages = 0;
      await this.#pruneWhenDue();
      if (result!.rows < this.#batchSize) await this.#sleep(this.#pollMs);
    }
  }

  #sleep(ms: number): Promise<void> {
    if (this.#stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = null;
        done();
      };
    });
  }

  async #pruneWhenDue(): Promise<void> {
    if (this.#keepForwardedMs === null) return;
    const every = Math.min(60_000, Math.max(1000, this.#keepForwardedMs / 2));
    if (Date.now() - this.#lastPrune < every) return;
    this.#lastPrune = Date.now();
    try {
      await this.prune();
    } catch (err) {
      this.#onEvent({ type: 'unavailable', source: 'database', error: err, retryInMs: every });
    }
  }

  /**
   * Forwards batches until none finds a due row (or Spool is unavailable),
   * then deletes old forwarded rows. Database errors throw.
   */
  async drain(): Promise<OutboxDrainResult> {
    const total: OutboxDrainResult = { batches: 0, rows: 0, forwarded: 0, created: 0, existing: 0, failed: 0, pruned: 0, status: { waiting: 0, failing: 0, oldestWaitingAt: null, lagMs: 0 } };
    for (;;) {
      const result = await this.runBatch();
      total.batches += 1;
      total.rows += result.rows;
      total.forwarded += result.forwarded;
      total.created += result.created;
      total.existing += result.existing;
      total.failed += result.failed;
      if (result.unavailable !== undefined) {
        total.unavailable = result.unavailable;
        break;
      }
      if (result.rows === 0) break;
    }
    if (total.unavailable === undefined) total.pruned = await this.prune();
    total.status = await this.status();
    return total;
  }

  /** Deletes rows forwarded longer ago than keepForwardedMs; returns how many. */
  async prune(): Promise<number> {
    if (this.#keepForwardedMs === null) return 0;
    let deleted = 0;
    for (let round = 0; round < 100; round++) {
      const result = await this.#query(PRUNE_SQL, [this.#keepForwardedMs]);
      deleted += result.rowCount ?? 0;
      if ((result.rowCount ?? 0) < 1000) break;
    }
    if (deleted > 0) this.#onEvent({ type: 'pruned', deleted });
    return deleted;
  }

  /** How many rows wait, how many of them failed last time, and how old the oldest is. */
  async status(): Promise<OutboxStatus> {
    const result = await this.#query(STATUS_SQL, []);
    const row = result.rows[0] as { waiting: number; failing: number; oldest: Date | null; lag_ms: number };
    return { waiting: row.waiting, failing: row.failing, oldestWaitingAt: row.oldest, lagMs: Math.max(0, Math.round(row.lag_ms)) };
  }

  /** The oldest waiting rows whose last send failed, with the error. */
  async failing(limit = 20): Promise<OutboxFailingRow[]> {
    const result = await this.#query(FAILING_SQL, [limit]);
    return (result.rows as { id: string; queue_name: string; ordering_key: string | null; attempts: number; last_error: string; next_attempt_at: Date | null; created_at: Date }[]).map((row) => ({
      id: row.id,
      queueName: row.queue_name,
      orderingKey: row.ordering_key,
      attempts: row.attempts,
      lastError: row.last_error,
      nextAttemptAt: row.next_attempt_at,
      createdAt: row.created_at,
    }));
  }

  async #query(text: string, values: unknown[]): Promise<{ rows: unknown[]; rowCount?: number | null }> {
    const session = await this.#pool.connect();
    try {
      const result = await session.query(text, values);
      session.release();
      return result;
    } catch (err) {
      session.release(err instanceof Error ? err : true);
      throw err;
    }
  }

  /**
   * One transaction: takes up to batchSize due rows, sends them, marks them.
   * Throws on database errors (nothing is marked then; the rows go again).
   */
  async runBatch(): Promise<OutboxBatchResult> {
    const started = Date.now();
    const session = await this.#pool.connect();
    try {
      // The transaction stays open while Spool answers; a relay that vanished
      // without closing its connection must not hold its rows and keys for long.
      await session.query("BEGIN; SET LOCAL idle_in_transaction_session_timeout = '5min'");
      // More keys than a batch uses: the oldest ones may be held by another relay, which then takes the next.
      const heads = (await session.query(HEADS_SQL, [this.#batchSize * KEY_CANDIDATES])).rows[0] as { outbox_id: string | null; keys: string[] };
      if (!heads.outbox_id) throw new Error('spool_outbox_meta has no row: run the outbox DDL again (ensureOutboxTable, or `spool outbox init`)');
      const locked = heads.keys.length > 0 ? ((await session.query(LOCK_KEYS_SQL, [heads.keys, this.#batchSize])).rows as { key: string }[]).map((r) => r.key) : [];
      const keyed = locked.length > 0 ? ((await session.query(KEYED_ROWS_SQL, [locked, this.#rowsPerKey])).rows as WaitingRow[]) : [];
      const unkeyed = (await session.query(UNKEYED_ROWS_SQL, [this.#batchSize])).rows as WaitingRow[];
      const rows = this.#select(keyed, unkeyed);
      const result: OutboxBatchResult = { rows: rows.length, forwarded: 0, created: 0, existing: 0, failed: 0, durationMs: 0 };
      if (rows.length > 0) {
        const { answers, outage, unsent } = await this.#send(rows, heads.outbox_id);
        const forwarded = answers.filter((a): a is Extract<Answer, { jobId: string }> => 'jobId' in a);
        const refused = answers.filter((a): a is Extract<Answer, { error: string }> => 'error' in a);
        if (forwarded.length > 0) {
          await session.query(MARK_FORWARDED_SQL, [forwarded.map((a) => a.row.id), forwarded.map((a) => a.jobId)]);
        }
        const outageText = outage === undefined ? '' : `Spool unavailable: ${describeRefusal(outage)}`.slice(0, ERROR_TEXT_MAX);
        const failedRows = [
          ...refused.map((a) => ({ id: a.row.id, error: a.error.slice(0, ERROR_TEXT_MAX), delay: outboxRowBackoffMs(a.row.attempts) })),
          ...unsent.map((row) => ({ id: row.id, error: outageText, delay: null })),
        ];
        if (failedRows.length > 0) {
          await session.query(MARK_FAILED_SQL, [failedRows.map((f) => f.id), failedRows.map((f) => f.error), failedRows.map((f) => f.delay)]);
        }
        result.forwarded = forwarded.length;
        result.created = forwarded.filter((a) => a.created).length;
        result.existing = result.forwarded - result.created;
        result.failed = refused.length;
        if (outage !== undefined) result.unavailable = outage;
        for (const a of refused) {
          this.#onEvent({ type: 'row_failed', id: a.row.id, queueName: a.row.queue_name, orderingKey: a.row.ordering_key, attempts: a.row.attempts + 1, error: a.error, retryInMs: outboxRowBackoffMs(a.row.attempts) });
        }
      }
      await session.query('COMMIT');
      session.release();
      result.durationMs = Date.now() - started;
      if (result.rows > 0) this.#onEvent({ type: 'batch', result });
      return result;
    } catch (err) {
      // The connection is closed rather than reused: its transaction and locks end with it.
      session.release(err instanceof Error ? err : true);
      throw err;
    }
  }

  /**
   * The batch: oldest first, at most batchSize rows; per key a prefix of its
   * waiting rows (cut before the first row still in backoff).
   */
  #select(keyed: WaitingRow[], unkeyed: WaitingRow[]): WaitingRow[] {
    const all = [...keyed, ...unkeyed].sort(byId).slice(0, this.#batchSize);
    const cut = new Set<string>();
    return all.filter((row) => {
      if (row.ordering_key === null) return true;
      if (cut.has(row.ordering_key)) return false;
      if (!row.due) {
        cut.add(row.ordering_key);
        return false;
      }
      return true;
    });
  }

  /**
   * Sends in waves: wave n holds the n-th row of every key (and, in wave 0,
   * every row without a key), so a key's rows reach Spool strictly one after
   * another while different keys share requests. A refused row ends its key
   * for this batch; an outage ends the batch after the wave in flight.
   */
  async #send(rows: WaitingRow[], outboxId: string): Promise<{ answers: Answer[]; outage?: unknown; unsent: WaitingRow[] }> {
    const waves: WaitingRow[][] = [];
    const position = new Map<string, number>();
    for (const row of rows) {
      let wave = 0;
      if (row.ordering_key !== null) {
        wave = position.get(row.ordering_key) ?? 0;
        position.set(row.ordering_key, wave + 1);
      }
      (waves[wave] ??= []).push(row);
    }
    const answers: Answer[] = [];
    const blocked = new Set<string>();
    let outage: unknown;
    const unsent: WaitingRow[] = [];
    for (const wave of waves) {
      const ready = wave.filter((row) => row.ordering_key === null || !blocked.has(row.ordering_key));
      const tasks: (() => Promise<void>)[] = [];
      const bulk = new Map<string, WaitingRow[]>();
      for (const row of ready) {
        if (Object.keys(row.job).every((field) => BULK_FIELDS.has(field))) {
          const group = bulk.get(row.queue_name) ?? [];
          group.push(row);
          bulk.set(row.queue_name, group);
        } else {
          tasks.push(() => this.#sendOne(row, outboxId, answers, unsent, (err) => (outage ??= err)));
        }
      }
      for (const [queue, group] of bulk) {
        for (let i = 0; i < group.length; i += BULK_CHUNK) {
          const chunk = group.slice(i, i + BULK_CHUNK);
          tasks.push(() => this.#sendBulk(queue, chunk, outboxId, answers, unsent, (err) => (outage ??= err)));
        }
      }
      await limited(tasks, this.#concurrency);
      for (const answer of answers) if ('error' in answer && answer.row.ordering_key !== null) blocked.add(answer.row.ordering_key);
      if (outage !== undefined) break;
    }
    return { answers, outage, unsent };
  }

  #params(row: WaitingRow, outboxId: string): Record<string, unknown> {
    const params = fromWire<Record<string, unknown>>(row.job);
    // The job's own idempotency key wins: a repeat of it is the application's intent.
    if (typeof params.idempotencyKey !== 'string' || params.idempotencyKey === '') params.idempotencyKey = `outbox:${outboxId}:${row.id}`;
    return params;
  }

  async #sendOne(row: WaitingRow, outboxId: string, answers: Answer[], unsent: WaitingRow[], onOutage: (err: unknown) => void): Promise<void> {
    try {
      const params = { ...this.#params(row, outboxId), queueName: row.queue_name } as unknown as CreateJobParams;
      const answer = await this.#spool.jobs.create(params);
      answers.push({ row, jobId: answer.id, created: answer.created });
    } catch (err) {
      if (isSpoolOutage(err)) {
        onOutage(err);
        unsent.push(row);
      } else {
        answers.push({ row, error: describeRefusal(err) });
      }
    }
  }

  async #sendBulk(queue: string, rows: WaitingRow[], outboxId: string, answers: Answer[], unsent: WaitingRow[], onOutage: (err: unknown) => void): Promise<void> {
    try {
      // The items carry the server's bulk fields (BULK_FIELDS), a superset of the contract's BulkJobItem.
      const jobs = rows.map((row) => this.#params(row, outboxId) as unknown as BulkJobItem);
      const answer = await this.#spool.jobs.bulk({ queueName: queue, jobs });
      const seen = new Set<number>();
      for (const ok of answer.succeeded) {
        const row = rows[ok.index];
        if (!row || seen.has(ok.index)) continue;
        seen.add(ok.index);
        answers.push({ row, jobId: ok.jobId, created: ok.created });
      }
      for (const bad of answer.failed) {
        const row = rows[bad.index];
        if (!row || seen.has(bad.index)) continue;
        seen.add(bad.index);
        answers.push({ row, error: bad.error });
      }
      // Not answered for: not known to exist in Spool, so not marked.
      rows.forEach((row, index) => {
        if (!seen.has(index)) answers.push({ row, error: 'the bulk answer did not mention this item' });
      });
    } catch (err) {
      if (isSpoolOutage(err)) {
        onOutage(err);
        unsent.push(...rows);
      } else {
        const error = describeRefusal(err);
        for (const row of rows) answers.push({ row, error });
      }
    }
  }
}
