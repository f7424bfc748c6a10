import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const hit = sqlFile(import.meta.url, './rate-limit-hit.sql');
const prune = sqlFile(import.meta.url, './rate-limit-prune.sql');

/**
 * Counts one request against `bucket`'s fixed window of `windowMs`, shared
 * by every process on the database. Returns the requests counted in the
 * window so far (this one included) and the ms until it ends.
 */
export async function rateLimitHit(db: Queryable, bucket: string, windowMs: number): Promise<{ hits: number; ttlMs: number }> {
  const [row] = await run<{ hits: number; ttl_ms: number }>(db, hit, [bucket, windowMs]);
  return { hits: row!.hits, ttlMs: row!.ttl_ms };
}

/** Deletes up to `batchSize` counters whose window ended more than `graceMs` ago. Returns how many. */
export async function rateLimitPrune(db: Queryable, graceMs: number, batchSize: number): Promise<number> {
  return (await run(db, prune, [graceMs, batchSize])).length;
}
