import { randomBytes } from 'node:crypto';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { generateApiKey } from './api-key.js';

const statement = sqlFile(import.meta.url, './organization-create.sql');

export interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
  plan_tier: string;
  billing_email: string | null;
  settings: Record<string, unknown>;
  custom_limits: Record<string, unknown> | null;
  stripe_customer_id: string | null;
  stripe_subscription_id: string | null;
  stripe_subscription_status: string | null;
  stripe_current_period_end: Date | null;
  stripe_cancel_at_period_end: boolean | null;
  jobs_today: number;
  jobs_today_date: Date;
  created_at: Date;
  updated_at: Date;
}

export interface CreatedOrganization {
  organization: OrganizationRow;
  apiKey: { id: string; key: string; name: string; created_at: Date };
}

/** A new incoming-webhook token (docs/compatibility.md §3.14: `whk_` + base64url of 24 random bytes). */
export function generateWebhookToken(): string {
  return `whk_${randomBytes(24).toString('base64url')}`;
}

/**
 * Creates an organization with its initial key (all queues). The plain key is
 * returned once and only its SHA-256 is stored. A duplicate slug raises 23505.
 * Every organization starts with a webhook token: custom ingestion without a
 * credential would let anyone who learns the organization id enqueue jobs.
 */
export async function organizationCreate(
  db: Queryable,
  input: { name: string; slug: string; planTier: string; billingEmail?: string | null; settings?: Record<string, unknown> | null; keyName?: string; environment: 'development' | 'production' },
): Promise<CreatedOrganization> {
  const generated = generateApiKey(input.environment);
  const rows = await run<OrganizationRow & { key_id: string; key_name: string; key_created_at: Date }>(db, statement, [
    input.name,
    input.slug,
    input.planTier,
    input.billingEmail ?? null,
    JSON.stringify({ ...input.settings, webhook_token: generateWebhookToken() }),
    input.keyName ?? 'Initial Admin Key',
    generated.hash,
    generated.prefix,
    ['*'],
  ]);
  const { key_id, key_name, key_created_at, ...organization } = rows[0]!;
  return { organization, apiKey: { id: key_id, key: generated.key, name: key_name, created_at: key_created_at } };
}
