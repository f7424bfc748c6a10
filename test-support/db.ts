import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool, type Db } from '@spool/engine';
import { databaseUrl } from './scratch-postgres.js';

/**
 * Each test file gets its own database, cloned from the migrated template
 * that `npm test` (scripts/test.ts) builds once. Cloning is a file copy, so
 * files run in parallel without seeing each other's rows.
 */
export interface TestDatabase {
  url: string;
  name: string;
  pool: Db;
  /** Drops the database (kept when SPOOL_KEEP_TEST_DB=1, for looking inside). */
  drop(): Promise<void>;
}

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with \`npm test\`, which prepares the database.`);
  return value;
}

export async function createTestDatabase(label = 'test', options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = requireEnv('SPOOL_TEST_ADMIN_URL');
  const template = requireEnv('SPOOL_TEST_TEMPLATE');
  const name = `${template}_${label.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(0, 20)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    // `empty`: no schema at all, for tests of the migrations themselves (still named after the template, so `npm test` drops it).
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${options.empty ? '' : ` TEMPLATE ${pg.escapeIdentifier(template)}`}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(adminUrl, name);
  const pool = createPool({ connectionString: url, max: 30, applicationName: `spool-test-${label}` });
  return {
    url,
    name,
    pool,
    async drop() {
      await pool.end();
      if (process.env.SPOOL_KEEP_TEST_DB === '1') return;
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        // pool.end() (here and in the tests' own pools) resolves once its
        // clients are told to close, not once their sessions are gone. FORCE
        // would terminate a session still closing, and its client, no longer
        // in any pool, would throw the termination as an uncaught error after
        // the test; so give the sessions a moment to end on their own first.
        for (let waited = 0; waited < 5000; waited += 50) {
          const open = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
          if (open.rows[0]!.n === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A fresh organization row to scope test data. */
export async function createOrganization(db: Db, slug = `org-${randomBytes(4).toString('hex')}`): Promise<string> {
  const result = await db.query<{ id: string }>('INSERT INTO spool.organizations (name, slug) VALUES ($1, $1) RETURNING id', [slug]);
  return result.rows[0]!.id;
}
