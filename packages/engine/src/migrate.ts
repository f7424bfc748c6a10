import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.js';
import { transaction } from './db.js';
import { installSqlFunctions } from './sql-functions.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any constant works; it only has to be the same in every Spool process.
const MIGRATION_LOCK_KEY = 7_340_191_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The ordered `NNN_name.sql` files shipped with the engine. */
export function listMigrations(): Migration[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 3)),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(MIGRATIONS_DIR + file, 'utf8'),
    }));
}

export interface MigrateResult {
  applied: string[];
  current: number;
}

/**
 * Applies pending migrations in one transaction under a transaction-scoped
 * advisory lock: two processes starting together serialize here, and the
 * second finds nothing left to do. A transaction lock (not a session lock)
 * also works through PgBouncer in transaction mode.
 */
export interface MigrateOptions {
  /**
   * Applies only the migrations numbered below this one and leaves out the
   * SQL functions (they belong to the newest schema): a database as an
   * older release left it, for the tests of an upgrade.
   */
  below?: number;
}

export async function migrate(db: Db, log: (message: string) => void = () => {}, options: MigrateOptions = {}): Promise<MigrateResult> {
  return transaction(db, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query('CREATE SCHEMA IF NOT EXISTS spool');
    await client.query(`CREATE TABLE IF NOT EXISTS spool.schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const done = await client.query<{ version: number }>('SELECT version FROM spool.schema_migrations');
    const seen = new Set(done.rows.map((row) => row.version));
    const applied: string[] = [];
    let current = Math.max(0, ...seen);
    for (const migration of listMigrations()) {
      if (seen.has(migration.version)) continue;
      if (options.below !== undefined && migration.version >= options.below) break;
      log(`applying migration ${migration.name}`);
      await client.query(migration.sql);
      await client.query('INSERT INTO spool.schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      applied.push(migration.name);
      current = Math.max(current, migration.version);
    }
    if (options.below === undefined) await installSqlFunctions(client);
    return { applied, current };
  });
}
