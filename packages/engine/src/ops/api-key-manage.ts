import type { ApiKeyRole } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import { generateApiKey } from './api-key.js';

const create = sqlFile(import.meta.url, './api-key-create.sql');
const list = sqlFile(import.meta.url, './api-key-list.sql');
const get = sqlFile(import.meta.url, './api-key-get.sql');
const update = sqlFile(import.meta.url, './api-key-update.sql');
const revoke = sqlFile(import.meta.url, './api-key-revoke.sql');

/** A key as listed: never the key itself, which is shown only at creation. */
export interface ApiKeyRow {
  id: string;
  organization_id: string;
  name: string;
  queues: string[];
  role: ApiKeyRole;
  rate_limit: number | null;
  is_active: boolean;
  created_at: Date;
  last_used: Date | null;
  expires_at: Date | null;
}

export interface NewApiKey {
  organizationId: string;
  name: string;
  /** [] or containing "*" = every queue. */
  queues: string[];
  rateLimit?: number | null;
  expiresAt?: Date | null;
  /** Default `admin`. */
  role?: ApiKeyRole;
  environment: 'development' | 'production';
}

/**
 * Creates a key for an organization and returns it with the plain key, which
 * is not stored (only its SHA-256). Null when the organization does not exist.
 */
export async function apiKeyCreate(db: Queryable, input: NewApiKey): Promise<(ApiKeyRow & { key: string }) | null> {
  if (!isUuid(input.organizationId)) return null;
  const generated = generateApiKey(input.environment);
  const rows = await run<ApiKeyRow>(db, create, [
    input.organizationId,
    input.name,
    generated.hash,
    generated.prefix,
    input.queues,
    input.rateLimit ?? null,
    input.expiresAt ?? null,
    input.role ?? 'admin',
  ]);
  return rows[0] ? { ...rows[0], key: generated.key } : null;
}

/** Every key of an organization, revoked ones included, newest first. */
export async function apiKeyList(db: Queryable, organizationId: string): Promise<ApiKeyRow[]> {
  return run<ApiKeyRow>(db, list, [organizationId]);
}

/** One key of the organization, or null (also for malformed ids). */
export async function apiKeyGet(db: Queryable, organizationId: string, id: string): Promise<ApiKeyRow | null> {
  if (!isUuid(id)) return null;
  const rows = await run<ApiKeyRow>(db, get, [organizationId, id]);
  return rows[0] ?? null;
}

export interface ApiKeyPatch {
  name?: string;
  queues?: string[];
  /** undefined keeps the limit; null removes it. */
  rateLimit?: number | null;
  isActive?: boolean;
  role?: ApiKeyRole;
}

/**
 * Applies a partial update; null when the key is not the organization's.
 * `refused` (nothing changed) when the patch would reactivate a revoked key:
 * revocation is final.
 */
export async function apiKeyUpdate(db: Queryable, organizationId: string, id: string, patch: ApiKeyPatch): Promise<ApiKeyRow | 'refused' | null> {
  if (!isUuid(id)) return null;
  const rows = await run<ApiKeyRow & { refused: boolean }>(db, update, [
    organizationId,
    id,
    patch.name ?? null,
    patch.queues ?? null,
    patch.rateLimit !== undefined,
    patch.rateLimit ?? null,
    patch.isActive ?? null,
    patch.role ?? null,
  ]);
  const row = rows[0];
  if (!row) return null;
  if (row.refused) return 'refused';
  const { refused: _refused, ...key } = row;
  return key;
}

/** Revokes a key (is_active = false); false when the key is not the organization's. */
export async function apiKeyRevoke(db: Queryable, organizationId: string, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  const rows = await run(db, revoke, [organizationId, id]);
  return rows.length > 0;
}
