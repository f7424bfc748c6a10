import type { Db, Queryable } from '../db.js';
import { run, sqlFile, transaction } from '../db.js';
import { isUuid } from '../ids.js';
import type { OrganizationRow } from './organization-create.js';

const get = sqlFile(import.meta.url, './organization-get.sql');
const update = sqlFile(import.meta.url, './organization-update.sql');
const webhookTokenSet = sqlFile(import.meta.url, './organization-webhook-token-set.sql');
const remove = sqlFile(import.meta.url, './organization-delete.sql');
const removeJobs = sqlFile(import.meta.url, './organization-delete-jobs.sql');
const blockers = sqlFile(import.meta.url, './organization-blockers.sql');
const slugTaken = sqlFile(import.meta.url, './organization-slug-taken.sql');
const list = sqlFile(import.meta.url, './organization-list.sql');

/** An organization by id, or null (also for malformed ids). */
export async function organizationGet(db: Queryable, id: string): Promise<OrganizationRow | null> {
  if (!isUuid(id)) return null;
  const rows = await run<OrganizationRow>(db, get, [id]);
  return rows[0] ?? null;
}

export interface OrganizationPatch {
  name?: string;
  /** undefined keeps it; null clears it. */
  billingEmail?: string | null;
  /** Replaces settings, keeping the webhook token. */
  settings?: Record<string, unknown>;
  planTier?: string;
  /** undefined keeps them; null clears them. */
  customLimits?: Record<string, unknown> | null;
}

/** Applies a partial update; null when the organization does not exist. */
export async function organizationUpdate(db: Queryable, id: string, patch: OrganizationPatch): Promise<OrganizationRow | null> {
  if (!isUuid(id)) return null;
  const rows = await run<OrganizationRow>(db, update, [
    id,
    patch.name ?? null,
    patch.billingEmail !== undefined,
    patch.billingEmail ?? null,
    patch.settings === undefined ? null : JSON.stringify(patch.settings),
    patch.planTier ?? null,
    patch.customLimits !== undefined,
    patch.customLimits == null ? null : JSON.stringify(patch.customLimits),
  ]);
  return rows[0] ?? null;
}

/** Sets (or with null, clears) the organization's ingestion token in settings.webhook_token. */
export async function organizationSetWebhookToken(db: Queryable, id: string, token: string | null): Promise<OrganizationRow | null> {
  if (!isUuid(id)) return null;
  const rows = await run<OrganizationRow>(db, webhookTokenSet, [id, token]);
  return rows[0] ?? null;
}

export interface OrganizationBlockers {
  active_jobs: number;
  live_workers: number;
  active_schedules: number;
}

/**
 * Deletes an organization with everything it owns. Unless `force`, refuses
 * (returns the blockers) while it has active jobs, live workers or active
 * schedules. `deleted: false` with no blockers means it did not exist.
 */
export async function organizationDelete(db: Db, id: string, force = false): Promise<{ deleted: boolean; blockers: OrganizationBlockers | null }> {
  if (!isUuid(id)) return { deleted: false, blockers: null };
  const deleted = await transaction(db, async (client) => {
    if ((await run(client, remove, [id, force])).length === 0) return false;
    // A statement of its own: its snapshot is taken after the delete above
    // waited for inserts in flight (migration 013).
    await run(client, removeJobs, [id]);
    return true;
  });
  if (deleted) return { deleted: true, blockers: null };
  if (force || !(await organizationGet(db, id))) return { deleted: false, blockers: null };
  const [found] = await run<OrganizationBlockers>(db, blockers, [id]);
  return { deleted: false, blockers: found ?? null };
}

/** The subset of `slugs` already in use. */
export async function organizationSlugsTaken(db: Queryable, slugs: string[]): Promise<Set<string>> {
  if (slugs.length === 0) return new Set();
  const rows = await run<{ slug: string }>(db, slugTaken, [slugs]);
  return new Set(rows.map((row) => row.slug));
}

export const ORGANIZATION_SORT_COLUMNS = ['name', 'slug', 'plan_tier', 'updated_at', 'created_at'] as const;

export interface OrganizationListQuery {
  planTier?: string | null;
  search?: string | null;
  sortBy: (typeof ORGANIZATION_SORT_COLUMNS)[number];
  sortOrder: 'asc' | 'desc';
  limit: number;
  offset: number;
}

/** A page of organizations (admin), with the number of all matches. */
export async function organizationList(db: Queryable, query: OrganizationListQuery): Promise<{ rows: OrganizationRow[]; total: number }> {
  const rows = await run<OrganizationRow & { total: number }>(db, list, [
    query.planTier ?? null,
    query.search || null,
    query.sortBy,
    query.sortOrder,
    query.limit,
    query.offset,
  ]);
  return { rows: rows.map(({ total: _total, ...row }) => row), total: rows[0]?.total ?? 0 };
}
