import { createHash, randomBytes } from 'node:crypto';
import type { ApiKeyRole } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';

const authenticate = sqlFile(import.meta.url, './api-key-authenticate.sql');
const byId = sqlFile(import.meta.url, './api-key-by-id.sql');
const touch = sqlFile(import.meta.url, './api-key-touch.sql');

/** NOTIFY channel of migration 012's triggers: an API key or its organization changed (servers drop cached keys). */
export const AUTH_CHANNEL = 'spool_auth';

export interface ApiKeyIdentity {
  id: string;
  organization_id: string;
  queues: string[];
  role: ApiKeyRole;
  rate_limit: number | null;
  is_active: boolean;
  expires_at: Date | null;
  last_used: Date | null;
  plan_tier: string;
  custom_limits: Record<string, unknown> | null;
}

/** A new API key: `sk_live_`/`sk_test_` + 43 characters of base64url (32 random bytes). Shown once. */
export function generateApiKey(environment: 'development' | 'production'): { key: string; hash: Buffer; prefix: string } {
  const key = `${environment === 'production' ? 'sk_live_' : 'sk_test_'}${randomBytes(32).toString('base64url')}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 12) };
}

/** Keys are random, so a fast hash is enough (bcrypt is for low-entropy passwords). */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** The key row for a presented key, or null. Callers check is_active and expires_at. */
export async function apiKeyAuthenticate(db: Queryable, key: string): Promise<ApiKeyIdentity | null> {
  return apiKeyByHash(db, hashApiKey(key));
}

/** The key row for a key's SHA-256 (for callers that already hashed it), or null. */
export async function apiKeyByHash(db: Queryable, hash: Buffer): Promise<ApiKeyIdentity | null> {
  const rows = await run<ApiKeyIdentity>(db, authenticate, [hash]);
  return rows[0] ?? null;
}

export async function apiKeyById(db: Queryable, id: string): Promise<ApiKeyIdentity | null> {
  if (!isUuid(id)) return null;
  const rows = await run<ApiKeyIdentity>(db, byId, [id]);
  return rows[0] ?? null;
}

export async function apiKeyTouch(db: Queryable, id: string): Promise<void> {
  await run(db, touch, [id]);
}
