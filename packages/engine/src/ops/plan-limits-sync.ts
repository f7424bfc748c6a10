import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const statement = sqlFile(import.meta.url, './plan-limits-sync.sql');

/** Writes every plan's limits (keyed by `tier`) where spool.enqueue() reads them. */
export async function planLimitsSync(db: Queryable, plans: readonly { tier: string }[]): Promise<void> {
  await run(db, statement, [plans.map((p) => p.tier), plans.map((p) => JSON.stringify(p))]);
}
