import type { Db, Queryable } from '../db.js';
import { run, sqlFile, transaction } from '../db.js';
import { HistoryCursor, type HistoryCursorState } from '../history-cursor.js';

const rollup = sqlFile(import.meta.url, './queue-stats-rollup.sql');
const rotate = sqlFile(import.meta.url, './queue-stats-rotate.sql');
const timeseriesQueue = sqlFile(import.meta.url, './stats-timeseries-queue.sql');
const timeseriesOrganization = sqlFile(import.meta.url, './stats-timeseries-organization.sql');

/** The rollup's row in spool.event_cursors (migration 023). */
export const QUEUE_STATS_CURSOR = 'queue-stats';

/** Steps the history keeps: one minute (7 days) and one hour (90 days). */
export const STATS_STEPS = [60, 3600] as const;
export type StatsStep = (typeof STATS_STEPS)[number];

export interface RollupResult {
  /** job_history rows read (new ones and settled gaps). */
  rows: number;
  /** Job events they held (a routine row holds many). */
  events: number;
  /** Minute and hour rows written. */
  buckets: number;
  /** The read hit the limit: more rows are waiting. */
  full: boolean;
  /** Another process holds the cursor (a leader handover in progress): nothing was done. */
  busy: boolean;
}

/**
 * Rolls the job history after the cursor (at most `limit` rows) into the
 * per-minute and per-hour activity of each queue, and moves the cursor, in
 * one transaction: each row is counted once, whatever crashes when. The
 * cursor row is locked with SKIP LOCKED, so two leaders for a moment do not
 * both count a row.
 */
export async function queueStatsRollup(db: Db, limit = 5000): Promise<RollupResult> {
  return transaction(db, async (client) => {
    const locked = await client.query<{ scanned_to: number; gaps: HistoryCursorState['gaps'] }>(
      'SELECT scanned_to, gaps FROM spool.event_cursors WHERE name = $1 FOR UPDATE SKIP LOCKED',
      [QUEUE_STATS_CURSOR],
    );
    const state = locked.rows[0];
    if (!state) return { rows: 0, events: 0, buckets: 0, full: false, busy: true };
    const cursor = new HistoryCursor({ scannedTo: state.scanned_to, gaps: state.gaps });
    const before = cursor.scannedTo;
    const [row] = await run<{ ids: string[]; snapshot_xmin: string; snapshot_xmax: string; events: number; minutes: number; hours: number }>(
      client, rollup, [before, cursor.gapIds(), limit],
    );
    const ids = row!.ids.map(Number);
    const fresh = cursor.advance(ids, BigInt(row!.snapshot_xmin), BigInt(row!.snapshot_xmax));
    const next = cursor.toState();
    if (next.scannedTo !== before || JSON.stringify(next.gaps) !== JSON.stringify(state.gaps)) {
      await client.query('UPDATE spool.event_cursors SET scanned_to = $1, gaps = $2::jsonb, updated_at = now() WHERE name = $3', [next.scannedTo, JSON.stringify(next.gaps), QUEUE_STATS_CURSOR]);
    }
    return {
      rows: fresh.length,
      events: row!.events,
      buckets: row!.minutes + row!.hours,
      // A read stops at `limit` rows or at about `limit` events, whichever comes first.
      full: ids.filter((id) => id > before).length >= limit || row!.events >= limit,
      busy: false,
    };
  });
}

const PARTITION = /^queue_stats_(minute|hour)_\d{1,2}$/;

/**
 * Empties the ring partitions whose turn comes next (queue-stats-rotate.sql)
 * if they still hold rows of a turn ago: a TRUNCATE per day and per 10 days,
 * a no-op otherwise. The lock wait is bounded (a TRUNCATE queued behind a
 * long read would hold up every read after it); a partition not emptied now
 * is emptied on a later run, long before its rows could be read. Returns
 * the partitions it emptied.
 */
export async function queueStatsRotate(db: Db, lockTimeoutMs = 1000): Promise<string[]> {
  const candidates = await run<{ partition: string; starts: Date }>(db, rotate, []);
  const emptied: string[] = [];
  for (const { partition, starts } of candidates) {
    if (!PARTITION.test(partition)) throw new Error(`unexpected partition name ${partition}`);
    const stale = await db.query<{ stale: boolean }>(`SELECT EXISTS (SELECT 1 FROM spool.${partition} WHERE bucket < $1) AS stale`, [starts]);
    if (!stale.rows[0]?.stale) continue;
    await transaction(db, async (client) => {
      await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
      await client.query(`TRUNCATE spool.${partition}`);
    });
    emptied.push(partition);
  }
  return emptied;
}

/** One point of a timeseries: the activity of the bucket starting at `t`. */
export interface StatsPoint {
  t: Date;
  enqueued: number;
  started: number;
  completed: number;
  failed: number;
  retried: number;
  deadlettered: number;
  expired: number;
  wait_p50_ms: number | null;
  wait_p95_ms: number | null;
  wait_p99_ms: number | null;
  run_p50_ms: number | null;
  run_p95_ms: number | null;
  run_p99_ms: number | null;
}

export interface TimeseriesQuery {
  organizationId: string;
  /** One queue; or null for every queue of `queueFilter`. */
  queueName: string | null;
  /** LIKE patterns of the queues to add up (a key limited to queues); null = all. Ignored with `queueName`. */
  queueFilter?: string[] | null;
  /** First bucket (a multiple of `step`). */
  from: Date;
  /** End, exclusive (a multiple of `step`). */
  to: Date;
  step: StatsStep;
}

/**
 * The activity of one queue, or of an organization's queues added up, per
 * `step` from `from` to `to`: every bucket, zeros where nothing happened.
 * Percentiles come from the merged histograms (within 9.1 %); null where a
 * bucket has no sample.
 */
export async function statsTimeseries(db: Queryable, query: TimeseriesQuery): Promise<StatsPoint[]> {
  const rows = query.queueName !== null
    ? await run<TimeseriesRow>(db, timeseriesQueue, [query.organizationId, query.queueName, query.from, query.to, query.step])
    : await run<TimeseriesRow>(db, timeseriesOrganization, [query.organizationId, query.queueFilter ?? null, query.from, query.to, query.step]);
  const byTime = new Map(rows.map((row) => [row.t.getTime(), row]));
  const points: StatsPoint[] = [];
  for (let t = query.from.getTime(); t < query.to.getTime(); t += query.step * 1000) {
    const row = byTime.get(t);
    const wait = decodeHistogram(row?.wait_hist ?? []);
    const run = decodeHistogram(row?.run_hist ?? []);
    points.push({
      t: new Date(t),
      enqueued: row?.enqueued ?? 0,
      started: row?.started ?? 0,
      completed: row?.completed ?? 0,
      failed: row?.failed ?? 0,
      retried: row?.retried ?? 0,
      deadlettered: row?.deadlettered ?? 0,
      expired: row?.expired ?? 0,
      wait_p50_ms: histogramPercentile(wait, 0.5),
      wait_p95_ms: histogramPercentile(wait, 0.95),
      wait_p99_ms: histogramPercentile(wait, 0.99),
      run_p50_ms: histogramPercentile(run, 0.5),
      run_p95_ms: histogramPercentile(run, 0.95),
      run_p99_ms: histogramPercentile(run, 0.99),
    });
  }
  return points;
}

interface TimeseriesRow {
  t: Date;
  enqueued: number;
  started: number;
  completed: number;
  failed: number;
  retried: number;
  deadlettered: number;
  expired: number;
  /** int8[] arrives as strings. */
  wait_hist: (string | number)[] | null;
  run_hist: (string | number)[] | null;
}

const COUNT_BITS = 2 ** 40;

/** A stored histogram (migration 023: bucket << 40 | count) as [bucket, count] pairs, ascending. */
export function decodeHistogram(packed: readonly (string | number)[]): [bucket: number, count: number][] {
  return packed.map((element) => {
    const value = Number(element);
    const bucket = Math.floor(value / COUNT_BITS);
    return [bucket, value - bucket * COUNT_BITS];
  });
}

/** The bucket a duration falls in: as spool.stats_bucket. */
export function histogramBucket(ms: number): number {
  return ms < 1 ? 0 : Math.min(256, 1 + Math.floor((4 * Math.log(ms)) / Math.log(2)));
}

/** What a bucket stands for: its geometric middle (bucket 0, under 1 ms, reads as 0.5 ms). */
export function bucketValue(bucket: number): number {
  return bucket === 0 ? 0.5 : 2 ** ((bucket - 0.5) / 4);
}

/** The q-quantile (nearest rank) of a histogram, rounded to 0.1 ms; null when empty. */
export function histogramPercentile(histogram: readonly [number, number][], q: number): number | null {
  const total = histogram.reduce((sum, [, n]) => sum + n, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const [bucket, n] of histogram) {
    seen += n;
    if (seen >= rank) return Math.round(bucketValue(bucket) * 10) / 10;
  }
  return Math.round(bucketValue(histogram[histogram.length - 1]![0]) * 10) / 10;
}
