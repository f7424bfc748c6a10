import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const acquire = sqlFile(import.meta.url, './leader-acquire.sql');
const release = sqlFile(import.meta.url, './leader-release.sql');

/** The NOTIFY channel a released lease is announced on (payload: the lease name). */
export const LEADER_CHANNEL = 'spool_leader';

export interface LeaseAttempt {
  acquired: boolean;
  /** Until the current lease (ours or another's) expires, on the database clock; null when there is none. */
  remainingMs: number | null;
  currentHolder: string | null;
}

/** Takes or renews the lease `name` for `holder` for `ttlMs`. */
export async function leaderAcquire(db: Queryable, name: string, holder: string, ttlMs: number): Promise<LeaseAttempt> {
  const [row] = await run<{ acquired: boolean; remaining_ms: number | null; current_holder: string | null }>(db, acquire, [name, holder, ttlMs]);
  return { acquired: row!.acquired, remainingMs: row!.remaining_ms, currentHolder: row!.current_holder };
}

/** Gives the lease up if `holder` still has it; true when it did. */
export async function leaderRelease(db: Queryable, name: string, holder: string): Promise<boolean> {
  return (await run(db, release, [name, holder])).length > 0;
}
