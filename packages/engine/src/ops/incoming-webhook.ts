import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';

const ingestGet = sqlFile(import.meta.url, './organization-ingest-get.sql');
const secretSet = sqlFile(import.meta.url, './organization-webhook-secret-set.sql');
const secretDelete = sqlFile(import.meta.url, './organization-webhook-secret-delete.sql');
const secretList = sqlFile(import.meta.url, './organization-webhook-secret-list.sql');
const deliverySeen = sqlFile(import.meta.url, './incoming-delivery-seen.sql');
const deliveryRecord = sqlFile(import.meta.url, './incoming-delivery-record.sql');
const deliveryPrune = sqlFile(import.meta.url, './incoming-delivery-prune.sql');

export type WebhookProvider = 'github' | 'stripe';
export const WEBHOOK_PROVIDERS: readonly WebhookProvider[] = ['github', 'stripe'];

/** A secret as stored: AES-256-GCM output and the fingerprint of the key that sealed it. */
export interface SealedSecret {
  ciphertext: Buffer;
  iv: Buffer;
  authTag: Buffer;
  keyId: string;
}

export interface IngestOrganization {
  webhookToken: string | null;
  planTier: string;
  customLimits: Record<string, unknown> | null;
  /** The provider's sealed secret, or null when the organization has none. */
  secret: SealedSecret | null;
  /** Live organizations on the server, counted up to 2. */
  liveOrganizations: number;
}

/** What ingestion needs of a live organization (null: unknown, malformed id or deleted). */
export async function organizationIngestGet(db: Queryable, id: string, provider: WebhookProvider | null): Promise<IngestOrganization | null> {
  if (!isUuid(id)) return null;
  const [row] = await run<{
    webhook_token: string | null; plan_tier: string; custom_limits: Record<string, unknown> | null;
    ciphertext: Buffer | null; iv: Buffer | null; auth_tag: Buffer | null; key_id: string | null; live_organizations: number;
  }>(db, ingestGet, [id, provider]);
  if (!row) return null;
  const secret = row.ciphertext && row.iv && row.auth_tag && row.key_id ? { ciphertext: row.ciphertext, iv: row.iv, authTag: row.auth_tag, keyId: row.key_id } : null;
  return { webhookToken: row.webhook_token, planTier: row.plan_tier, customLimits: row.custom_limits, secret, liveOrganizations: row.live_organizations };
}

/** Stores or replaces a provider's sealed signing secret. */
export async function organizationWebhookSecretSet(db: Queryable, organizationId: string, provider: WebhookProvider, sealed: SealedSecret): Promise<{ provider: string; updated_at: Date }> {
  const [row] = await run<{ provider: string; updated_at: Date }>(db, secretSet, [organizationId, provider, sealed.ciphertext, sealed.iv, sealed.authTag, sealed.keyId]);
  return row!;
}

/** Removes a provider's signing secret; false when there was none. */
export async function organizationWebhookSecretDelete(db: Queryable, organizationId: string, provider: WebhookProvider): Promise<boolean> {
  return (await run(db, secretDelete, [organizationId, provider])).length > 0;
}

/** The providers that have a secret, with when it was last set. */
export async function organizationWebhookSecretList(db: Queryable, organizationId: string): Promise<Map<string, Date>> {
  const rows = await run<{ provider: string; updated_at: Date }>(db, secretList, [organizationId]);
  return new Map(rows.map((row) => [row.provider, row.updated_at]));
}

/** True when any of `keys` was recorded for this organization and provider. */
export async function incomingDeliverySeen(db: Queryable, organizationId: string, provider: string, keys: string[]): Promise<boolean> {
  if (keys.length === 0) return false;
  const [row] = await run<{ seen: boolean }>(db, deliverySeen, [organizationId, provider, keys]);
  return row?.seen ?? false;
}

/** Remembers the keys of an accepted delivery. */
export async function incomingDeliveryRecord(db: Queryable, organizationId: string, provider: string, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  await run(db, deliveryRecord, [organizationId, provider, keys]);
}

/** Forgets up to `batchSize` deliveries older than `maxAgeMs`. Returns how many. */
export async function incomingDeliveryPrune(db: Queryable, maxAgeMs: number, batchSize: number): Promise<number> {
  return (await run(db, deliveryPrune, [maxAgeMs, batchSize])).length;
}
