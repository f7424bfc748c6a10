import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';

const revoke = sqlFile(import.meta.url, './token-revoke.sql');

/** Revokes tokens (by jti) of one organization until their `exp` (unix seconds). */
export async function tokenRevoke(db: Queryable, organizationId: string, tokens: { jti: string; exp: number }[]): Promise<void> {
  const valid = tokens.filter((t) => isUuid(t.jti) && Number.isFinite(t.exp));
  if (valid.length === 0) return;
  await run(db, revoke, [valid.map((t) => t.jti), organizationId, valid.map((t) => Math.floor(t.exp))]);
}
