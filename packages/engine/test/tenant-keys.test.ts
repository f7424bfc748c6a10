/**
 * The path to more than one primary (docs/scaling.md) is to distribute the
 * tenant tables by organization_id (Citus or any sharded PostgreSQL), which
 * asks that every primary key, unique constraint and foreign key of a
 * distributed table include the distribution column. Most of the schema
 * already does; the keys below do not yet, each for the reason given in
 * docs/scaling.md ("What distributing by organization needs"). This test keeps
 * the list from growing: a new tenant table, key or foreign key without
 * organization_id fails here until it is designed with one (or the list and
 * the document say why not).
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
before(async () => {
  t = await createTestDatabase('tenant-keys');
});
after(async () => t.drop());

/** Keys of tenant tables without organization_id today (docs/scaling.md). */
const KNOWN = new Set([
  'api_keys.api_keys_pkey',
  'api_keys.api_keys_key_hash_key',
  'dead_letter_queue.dead_letter_queue_pkey',
  'dead_letter_queue.dead_letter_queue_job_key',
  'events.events_pkey',
  'job_history.job_history_pkey',
  'jobs.jobs_pkey',
  'outgoing_webhooks.outgoing_webhooks_pkey',
  'queue_config.queue_config_pkey',
  'revoked_tokens.revoked_tokens_pkey',
  'schedule_runs.schedule_runs_pkey',
  'schedule_runs.schedule_runs_schedule_id_fkey',
  'schedule_runs.schedule_runs_tick_key',
  'schedules.schedules_pkey',
  'webhook_deliveries.webhook_deliveries_pkey',
  'webhook_deliveries.webhook_deliveries_completion_key',
  'webhook_deliveries.webhook_deliveries_event_key',
  'webhook_deliveries.webhook_deliveries_log_event_key',
  'webhook_deliveries.webhook_deliveries_webhook_id_fkey',
  'workers.workers_pkey',
  'workflows.workflows_pkey',
]);

it('keeps organization_id in every key and foreign key of the tenant tables, but for the known ones', async () => {
  // Tenant tables: those with an organization_id column (partitions count as their parent).
  const { rows } = await t.pool.query<{ key: string }>(`
    WITH tenant AS (
      SELECT c.oid, c.relname
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'spool' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'organization_id' AND NOT a.attisdropped)
    ),
    keys AS (
      SELECT t.relname, con.conname AS name, con.conkey AS cols
      FROM tenant t JOIN pg_constraint con ON con.conrelid = t.oid
      WHERE con.contype IN ('p', 'u', 'f') AND NOT (con.contype = 'f' AND con.confrelid = 'spool.organizations'::regclass)
      UNION ALL
      SELECT t.relname, ic.relname, i.indkey::int2[]
      FROM tenant t JOIN pg_index i ON i.indrelid = t.oid JOIN pg_class ic ON ic.oid = i.indexrelid
      WHERE i.indisunique AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = i.indexrelid)
    )
    SELECT k.relname || '.' || k.name AS key
    FROM keys k
    JOIN tenant t ON t.relname = k.relname
    WHERE NOT EXISTS (
      SELECT 1 FROM pg_attribute a
      WHERE a.attrelid = t.oid AND a.attname = 'organization_id' AND a.attnum = ANY (k.cols)
    )
    ORDER BY 1`);
  const found = rows.map((r) => r.key);
  const added = found.filter((k) => !KNOWN.has(k));
  assert.deepEqual(added, [], 'keys without organization_id (docs/scaling.md says how to key a tenant table)');
  const fixed = [...KNOWN].filter((k) => !found.includes(k));
  assert.deepEqual(fixed, [], 'these keys have organization_id now: take them off the list here and in docs/scaling.md');
});
